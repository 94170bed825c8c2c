// ThreadSanitizer and LeakSanitizer defaults for the DDS test executables only
// (the core's tests need none). Compiled into every DDS test; inert without
// the sanitizer.
//
// Cyclone DDS (libddsc) is a prebuilt, uninstrumented library: TSan sees the
// memory accesses its interceptors make on Cyclone's behalf (memcpy, free, ...)
// but not Cyclone's own synchronisation (its atomics), so it reports races
// between Cyclone's threads that are ordered by atomics it cannot see.
// `called_from_lib` silences reports whose interceptor was called from libddsc
// itself; races involving simsync's own code (instrumented) are still reported.

extern "C" const char* __tsan_default_suppressions();
extern "C" const char* __tsan_default_suppressions()
{
    return "called_from_lib:libddsc.so.0debian\n";
}
