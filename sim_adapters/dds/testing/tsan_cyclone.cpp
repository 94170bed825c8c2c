// ThreadSanitizer suppressions for the programs that run Cyclone DDS in a
// ThreadSanitizer build (SIMSYNC_SANITIZE=thread): the DDS tests, the benchmark
// and simsync-clock-echo; linked only there (the core's tests need none).
//
// Cyclone DDS (libddsc) is a prebuilt, uninstrumented library: TSan sees what
// its interceptors do on Cyclone's behalf (memcpy, recvmsg, malloc/free,
// pthread_mutex_* on memory Cyclone's threads set up), but not Cyclone's own
// synchronisation through its atomics, which orders those accesses. Every report
// without this line has libddsc frames on both sides (Cyclone's receive, event
// and delivery threads against the thread that created the domain), none in
// simsync's code. `race:` suppresses only reports with a libddsc frame; TSan
// still sees Cyclone's mutexes as synchronisation, and a race between two
// accesses in simsync's own (instrumented) code is still reported.

extern "C" const char* __tsan_default_suppressions();
extern "C" const char* __tsan_default_suppressions() { return "race:libddsc.so.0debian\n"; }
