// The simsync web console: a page of the host process. It draws what the
// console's WebSocket sends (sim_adapters/web/README.md describes the messages)
// and sends the operator's commands. No framework, nothing loaded from elsewhere.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const state = {
    ws: null,
    welcome: null,
    frame: null,
    frames: 0,
    commandId: 0,
    replies: 0,
    rtf: [],           // [wall, achieved, target]
    tracks: [],        // {name, category, spans: [[asked, granted, released, requested, granted_sim]]}
    lastWall: 0,
    camera: null,        // {yaw, pitch, zoom}; from the scene's hint on the first picture
    cameraHint: null,
    bounds: null,
    reconnectDelay: 500,
    ping: null,          // the viewer's keep-alive timer
  };

  // ------------------------------------------------------------ connection

  // The control token: taken once from the URL's fragment (#token=..., which a
  // browser never sends to a server) or typed in, kept for this tab only
  // (sessionStorage) and sent in the first WebSocket message, never in a URL.
  const TOKEN_KEY = 'simsync-console-token';
  function takeTokenFromFragment() {
    const m = /^#token=([A-Za-z0-9_-]+)$/.exec(location.hash);
    if (m) sessionStorage.setItem(TOKEN_KEY, m[1]);
    if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  }

  function connect() {
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
    const ws = new WebSocket(url);
    state.ws = ws;
    ws.onopen = () => {
      setPill('connection', 'connected', 'on');
      state.reconnectDelay = 500;
      const token = sessionStorage.getItem(TOKEN_KEY);
      ws.send(JSON.stringify(token ? { type: 'hello', token: token } : { type: 'hello' }));
    };
    ws.onmessage = (event) => {
      let m;
      try { m = JSON.parse(event.data); } catch (e) { return; }
      if (m.type === 'welcome') onWelcome(m);
      else if (m.type === 'history') onHistory(m);
      else if (m.type === 'frame') onFrame(m);
      else if (m.type === 'reply') onReply(m);
    };
    ws.onclose = (event) => {
      if (state.ping) clearInterval(state.ping);
      state.ping = null;
      if (event.reason === 'wrong token') {
        sessionStorage.removeItem(TOKEN_KEY);
        $('token-form').hidden = false;
      }
      setPill('connection', 'disconnected' + (event.reason ? ': ' + event.reason : ''), 'off');
      state.ws = null;
      setTimeout(connect, state.reconnectDelay);
      state.reconnectDelay = Math.min(state.reconnectDelay * 2, 5000);
    };
  }

  function setPill(id, text, cls) {
    const el = $(id);
    el.textContent = text;
    el.className = 'pill ' + (cls || '');
  }

  function send(text) {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) {
      showMessage(false, 'not connected');
      return;
    }
    state.ws.send(JSON.stringify({ type: 'command', id: ++state.commandId, text: text }));
  }

  // -------------------------------------------------------------- messages

  function onWelcome(m) {
    state.welcome = m;
    $('title').textContent = m.title;
    document.title = m.title + ' \u2013 simsync console';
    $('step-size').textContent = fmt(m.step_s, 6);
    $('timeline-window').textContent = fmt(m.timeline_window_s, 0);
    if (m.control) setPill('control', 'control', 'on');
    else setPill('control', 'view only (control needs the token)', 'view');
    $('token-form').hidden = m.control || !m.token_required;
    $('insecure').hidden = !m.insecure;
    // A viewer that sends nothing is closed by the console: ping well within its limit.
    if (state.ping) clearInterval(state.ping);
    state.ping = null;
    if (!m.control && m.idle_timeout_s) {
      const ws = state.ws;
      state.ping = setInterval(() => {
        if (ws.readyState === WebSocket.OPEN) ws.send('{"type":"ping"}');
      }, Math.max(250, m.idle_timeout_s * 1000 / 3));
    }
    for (const b of document.querySelectorAll('#controls button')) b.disabled = !m.control;
    $('btn-scale').disabled = !m.control || !m.has_scale;
    if (!m.has_scene) $('world-info').textContent = 'this host draws no world';
  }

  function onHistory(m) {
    state.rtf = m.rtf.slice();
    state.tracks = [];
    for (const t of m.timeline) mergeTrack(t);
    state.lastWall = m.wall;
  }

  function mergeTrack(t) {
    let track = state.tracks[t.track];
    if (!track) track = state.tracks[t.track] = { name: t.name, category: t.category, spans: [] };
    track.name = t.name;
    track.category = t.category;
    for (const s of t.spans) track.spans.push(s);
  }

  function onFrame(f) {
    state.frame = f;
    state.frames++;
    document.body.dataset.frames = String(state.frames);
    state.lastWall = f.wall;
    state.rtf.push([f.wall, f.rtf.achieved, f.rtf.target]);
    const horizon = f.wall - (state.welcome ? state.welcome.history_window_s : 60);
    while (state.rtf.length && state.rtf[0][0] < horizon) state.rtf.shift();
    if (f.timeline) {
      for (const t of f.timeline) mergeTrack(t);
      const keep = f.wall - (state.welcome ? state.welcome.timeline_window_s : 5);
      for (const t of state.tracks) {
        if (!t) continue;
        let i = 0;
        while (i < t.spans.length && t.spans[i][2] < keep) i++;
        if (i) t.spans.splice(0, i);
      }
    }
    renderStatus(f);
    renderAccessors(f);
    drawRtf();
    drawTimeline();
    if (f.scene) drawWorld(f.scene);
  }

  function onReply(m) {
    showMessage(m.ok, m.ok ? m.message : 'error: ' + m.message);
  }

  function showMessage(ok, text) {
    const el = $('message');
    el.textContent = text;
    el.className = 'message ' + (ok ? 'ok' : 'error');
    el.dataset.ok = ok ? 'true' : 'false';
    el.dataset.seq = String(++state.replies);
  }

  // ---------------------------------------------------------------- status

  function fmt(x, digits) {
    return x === null || x === undefined || !isFinite(x) ? '\u2013' : Number(x).toFixed(digits);
  }

  function duration(s) {
    if (s < 1e-3) return (s * 1e6).toFixed(0) + ' \u00b5s';
    if (s < 1) return (s * 1e3).toFixed(1) + ' ms';
    return s.toFixed(2) + ' s';
  }

  function renderStatus(f) {
    const t = $('sim-time');
    t.textContent = fmt(f.now, 3) + ' s';
    t.dataset.ns = f.now_ns;
    const st = $('state');
    st.textContent = f.state;
    st.className = 'value ' + f.state;
    $('pause-at').textContent = f.pause_at !== null ? 'pauses at ' + fmt(f.pause_at, 3) + ' s' : '\u00a0';
    $('steps').textContent = String(f.steps);
    $('steps').dataset.value = String(f.steps);
    $('grants').textContent = String(f.grants);
    const a = $('rtf-achieved');
    a.textContent = f.rtf.achieved === null ? '\u2013' : fmt(f.rtf.achieved, 2) + '\u00d7';
    a.dataset.value = f.rtf.achieved === null ? '' : String(f.rtf.achieved);
    const tg = $('rtf-target');
    tg.textContent = f.rtf.target === null ? 'none (unpaced)' : fmt(f.rtf.target, 2) + '\u00d7';
    tg.dataset.value = f.rtf.target === null ? '' : String(f.rtf.target);
    $('grants-rate').textContent = fmt(f.grants_per_s, 0);
    $('waiting-for').textContent = f.waiting_for.length ? f.waiting_for.join(', ') : 'nobody';
    $('waiting-since').textContent = f.waiting_for.length ? 'for ' + duration(f.waiting_for_s) : '\u00a0';
  }

  function priority(p) {
    if (p === 2147483647) return 'max';
    if (p === -2147483648) return 'min';
    return Math.abs(p) >= 1e6 ? p.toExponential(0).replace('e+', 'e') : String(p);
  }

  function meanWaits() {
    const waits = {};
    for (const t of state.tracks) {
      if (!t || !t.spans.length) continue;
      let sum = 0;
      for (const s of t.spans) sum += s[1] - s[0];
      waits[t.name] = sum / t.spans.length;
    }
    return waits;
  }

  function renderAccessors(f) {
    const body = $('accessors').tBodies[0];
    const waits = meanWaits();
    const blocking = new Set(f.waiting_for);
    const rows = [];
    for (const a of f.accessors) {
      let activity;
      if (a.activity === 'holding') activity = 'holds ' + fmt(a.time, 3) + ' s';
      else if (a.activity === 'waiting') activity = 'waits for ' + fmt(a.time, 3) + ' s';
      else activity = a.kind === 'lockstep' ? 'idle, holds time at ' + fmt(a.time, 3) + ' s' : 'idle';
      if (a.registered === false) activity += ' (deregistered)';
      const tr = document.createElement('tr');
      if (blocking.has(a.name)) tr.className = 'blocking';
      else if (a.activity === 'holding') tr.className = 'holding';
      const cells = [a.name, a.kind, a.mode, priority(a.priority), activity, duration(a.for_s), String(a.grants),
        a.name in waits ? duration(waits[a.name]) : '\u2013'];
      cells.forEach((text, i) => {
        const td = document.createElement('td');
        td.textContent = text;
        if (i === 4) td.className = 'activity';
        if (i === 3 || i >= 5) td.classList.add('num');
        tr.appendChild(td);
      });
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    // The revoke list follows the accessors, keeping the operator's choice.
    const select = $('revoke-name');
    const chosen = select.value;
    const names = f.accessors.map((a) => a.name);
    if (names.join('\u0000') !== Array.from(select.options).map((o) => o.value).join('\u0000')) {
      select.replaceChildren(...names.map((n) => { const o = document.createElement('option'); o.value = n; o.textContent = n; return o; }));
      if (names.includes(chosen)) select.value = chosen;
    }
  }

  // ------------------------------------------------------------ canvases

  function fitCanvas(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(canvas.clientWidth * ratio));
    const h = Math.max(1, Math.round(canvas.clientHeight * ratio));
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    const ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return { ctx, w: w / ratio, h: h / ratio };
  }

  function drawRtf() {
    const { ctx, w, h } = fitCanvas($('rtf-plot'));
    ctx.clearRect(0, 0, w, h);
    const span = state.welcome ? state.welcome.history_window_s : 60;
    const now = state.lastWall;
    let top = 1.5;
    for (const p of state.rtf) {
      if (p[1] !== null) top = Math.max(top, p[1] * 1.15);
      if (p[2] !== null) top = Math.max(top, p[2] * 1.15);
    }
    const left = 34, bottom = h - 16;
    const x = (wall) => left + (w - left - 6) * (1 - (now - wall) / span);
    const y = (v) => bottom - (bottom - 8) * Math.min(v, top) / top;
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#8a98a8';
    ctx.strokeStyle = '#2c343d';
    ctx.lineWidth = 1;
    const step = top > 8 ? Math.ceil(top / 4) : top > 3 ? 1 : 0.5;
    for (let v = 0; v <= top; v += step) {
      ctx.beginPath(); ctx.moveTo(left, y(v)); ctx.lineTo(w - 6, y(v)); ctx.stroke();
      ctx.fillText(v.toFixed(step < 1 ? 1 : 0) + '\u00d7', 2, y(v) + 4);
    }
    ctx.fillText('-' + span.toFixed(0) + ' s', left, h - 3);
    ctx.fillText('now', w - 28, h - 3);
    const series = (index, colour, dash) => {
      ctx.strokeStyle = colour;
      ctx.setLineDash(dash);
      ctx.lineWidth = 1.6;
      ctx.beginPath();
      let pen = false;
      for (const p of state.rtf) {
        if (p[index] === null) { pen = false; continue; }
        if (pen) ctx.lineTo(x(p[0]), y(p[index])); else ctx.moveTo(x(p[0]), y(p[index]));
        pen = true;
      }
      ctx.stroke();
      ctx.setLineDash([]);
    };
    series(2, '#e0a03c', [5, 4]);
    series(1, '#4fa3e0', []);
    ctx.fillStyle = '#4fa3e0'; ctx.fillText('achieved', w - 130, 14);
    ctx.fillStyle = '#e0a03c'; ctx.fillText('target', w - 62, 14);
  }

  function drawTimeline() {
    const canvas = $('timeline');
    const tracks = state.tracks.filter((t) => t);
    const rowH = 18;
    canvas.style.height = Math.max(60, tracks.length * rowH + 22) + 'px';
    const { ctx, w, h } = fitCanvas(canvas);
    ctx.clearRect(0, 0, w, h);
    ctx.font = '11px system-ui, sans-serif';
    if (!tracks.length) {
      ctx.fillStyle = '#8a98a8';
      ctx.fillText(state.welcome && !state.welcome.has_timeline ? 'this host records no grants' : 'no grants yet', 10, 20);
      return;
    }
    const span = state.welcome ? state.welcome.timeline_window_s : 5;
    const now = state.lastWall;
    const left = 130, right = w - 6;
    const x = (wall) => left + (right - left) * (1 - (now - wall) / span);
    tracks.forEach((t, row) => {
      const y = 4 + row * rowH;
      ctx.fillStyle = '#8a98a8';
      ctx.fillText(t.name.length > 20 ? t.name.slice(0, 19) + '\u2026' : t.name, 4, y + 12);
      const solid = t.category === 'exclusive' ? '#e0a03c' : '#4fa3e0';
      const light = t.category === 'exclusive' ? 'rgba(224,160,60,0.28)' : 'rgba(79,163,224,0.28)';
      for (const s of t.spans) {
        if (s[2] < now - span) continue;
        const a = Math.max(left, x(s[0])), g = Math.max(left, x(s[1])), r = Math.max(left, x(s[2]));
        ctx.fillStyle = light;
        ctx.fillRect(a, y + 2, Math.max(0, g - a), rowH - 6);
        ctx.fillStyle = solid;
        ctx.fillRect(g, y + 2, Math.max(1, r - g), rowH - 6);
      }
    });
    ctx.fillStyle = '#8a98a8';
    for (let k = 0; k <= span; k++) {
      const px = x(now - k);
      ctx.fillRect(px, h - 16, 1, 4);
      ctx.fillText(k === 0 ? 'now' : '-' + k + ' s', px - (k === 0 ? 22 : 8), h - 3);
    }
  }

  // ---------------------------------------------------------------- world

  const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const norm = (a) => { const l = Math.hypot(a[0], a[1], a[2]) || 1; return [a[0] / l, a[1] / l, a[2] / l]; };

  function rotate(q, v) { // q = [x, y, z, w]
    const u = [q[0], q[1], q[2]], s = q[3];
    const uv = cross(u, v), uuv = cross(u, uv);
    return [v[0] + 2 * (s * uv[0] + uuv[0]), v[1] + 2 * (s * uv[1] + uuv[1]), v[2] + 2 * (s * uv[2] + uuv[2])];
  }

  function boundsOf(scene) {
    if (scene.bounds) return scene.bounds;
    if (!scene.shapes.length) return null;
    const b = [Infinity, Infinity, Infinity, -Infinity, -Infinity, -Infinity];
    for (const s of scene.shapes) {
      const r = Math.max(s[9], s[10], s[11]) / 2;
      for (let k = 0; k < 3; k++) { b[k] = Math.min(b[k], s[2 + k] - r); b[3 + k] = Math.max(b[3 + k], s[2 + k] + r); }
    }
    return b;
  }

  function shade(colour, light) {
    const f = 0.35 + 0.65 * Math.max(0, light);
    const r = ((colour >> 16) & 255) * f, g = ((colour >> 8) & 255) * f, b = (colour & 255) * f;
    return 'rgb(' + (r | 0) + ',' + (g | 0) + ',' + (b | 0) + ')';
  }

  function drawWorld(scene) {
    const canvas = $('world');
    canvas.dataset.shapes = String(scene.shapes.length);
    $('world-info').textContent = scene.error ? 'error: ' + scene.error
      : scene.time !== null ? scene.shapes.length + ' bodies at ' + fmt(scene.time, 3) + ' s' : 'no picture yet';
    if (!state.bounds || scene.bounds) state.bounds = boundsOf(scene);
    state.cameraHint = scene.camera || [-60, 25];
    if (!state.camera) resetCamera();
    const { ctx, w, h } = fitCanvas(canvas);
    ctx.clearRect(0, 0, w, h);
    const b = state.bounds;
    if (!b) return;
    const centre = [(b[0] + b[3]) / 2, (b[1] + b[4]) / 2, (b[2] + b[5]) / 2];
    const radius = Math.max(0.5, Math.hypot(b[3] - b[0], b[4] - b[1], b[5] - b[2]) / 2);
    const cam = state.camera;
    const dist = radius * 2.9 / cam.zoom; // the bounds' sphere fills the view (field of view 0.7 rad)
    const eye = [centre[0] + dist * Math.cos(cam.pitch) * Math.cos(cam.yaw),
      centre[1] + dist * Math.cos(cam.pitch) * Math.sin(cam.yaw),
      centre[2] + dist * Math.sin(cam.pitch)];
    const fwd = norm(sub(centre, eye));
    const right = norm(cross(fwd, [0, 0, 1]));
    const up = cross(right, fwd);
    const focal = 0.5 * Math.min(w, h) / Math.tan(0.5 * 0.7);
    const project = (p) => {
      const v = sub(p, eye);
      const z = Math.max(1e-3, dot(v, fwd));
      return [w / 2 + focal * dot(v, right) / z, h / 2 - focal * dot(v, up) / z, z];
    };
    const lightDir = norm([0.4, -0.5, 0.8]);

    if (scene.ground !== null) {
      const g = scene.ground;
      const ext = radius * 1.6;
      const n = 10;
      ctx.strokeStyle = '#26303a';
      ctx.lineWidth = 1;
      for (let i = 0; i <= n; i++) {
        const t = -ext + (2 * ext * i) / n;
        for (const [p0, p1] of [[[centre[0] + t, centre[1] - ext, g], [centre[0] + t, centre[1] + ext, g]],
          [[centre[0] - ext, centre[1] + t, g], [centre[0] + ext, centre[1] + t, g]]]) {
          const a = project(p0), c = project(p1);
          ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(c[0], c[1]); ctx.stroke();
        }
      }
    }

    const items = [];
    const faces = [[0, 1, 3, 2, [-1, 0, 0]], [4, 6, 7, 5, [1, 0, 0]], [0, 4, 5, 1, [0, -1, 0]],
      [2, 3, 7, 6, [0, 1, 0]], [0, 2, 6, 4, [0, 0, -1]], [1, 5, 7, 3, [0, 0, 1]]];
    for (const s of scene.shapes) {
      const pos = [s[2], s[3], s[4]], q = [s[5], s[6], s[7], s[8]], colour = s[12];
      if (s[1] === 0) {
        const p = project(pos);
        items.push({ z: p[2], draw: () => {
          const r = Math.max(1, focal * (s[9] / 2) / p[2]);
          const grad = ctx.createRadialGradient(p[0] - r / 3, p[1] - r / 3, r / 8, p[0], p[1], r);
          grad.addColorStop(0, shade(colour, 1.2));
          grad.addColorStop(1, shade(colour, 0.1));
          ctx.fillStyle = grad;
          ctx.beginPath(); ctx.arc(p[0], p[1], r, 0, 2 * Math.PI); ctx.fill();
        } });
        continue;
      }
      const half = [s[9] / 2, s[10] / 2, s[11] / 2];
      const corners = [];
      for (let i = 0; i < 8; i++) {
        const local = [(i & 4 ? 1 : -1) * half[0], (i & 2 ? 1 : -1) * half[1], (i & 1 ? 1 : -1) * half[2]];
        const r = rotate(q, local);
        corners.push([pos[0] + r[0], pos[1] + r[1], pos[2] + r[2]]);
      }
      const projected = corners.map(project);
      for (const f of faces) {
        const normal = rotate(q, f[4]);
        const c = [0, 1, 2, 3].map((k) => corners[f[k]]);
        const mid = [(c[0][0] + c[2][0]) / 2, (c[0][1] + c[2][1]) / 2, (c[0][2] + c[2][2]) / 2];
        if (dot(normal, sub(eye, mid)) <= 0) continue; // faces away
        const pts = [0, 1, 2, 3].map((k) => projected[f[k]]);
        items.push({ z: project(mid)[2], draw: () => {
          ctx.fillStyle = shade(colour, dot(normal, lightDir));
          ctx.strokeStyle = 'rgba(0,0,0,0.35)';
          ctx.beginPath();
          ctx.moveTo(pts[0][0], pts[0][1]);
          for (let k = 1; k < 4; k++) ctx.lineTo(pts[k][0], pts[k][1]);
          ctx.closePath(); ctx.fill(); ctx.stroke();
        } });
      }
    }
    items.sort((a, b) => b.z - a.z);
    for (const it of items) it.draw();
  }

  function resetCamera() {
    const hint = state.cameraHint || [-60, 25];
    state.camera = { yaw: hint[0] * Math.PI / 180, pitch: hint[1] * Math.PI / 180, zoom: 1 };
  }

  function setupCamera() {
    const canvas = $('world');
    let drag = null;
    canvas.addEventListener('pointerdown', (e) => { drag = [e.clientX, e.clientY]; canvas.setPointerCapture(e.pointerId); });
    canvas.addEventListener('pointerup', () => { drag = null; });
    canvas.addEventListener('pointermove', (e) => {
      if (!drag || !state.camera) return;
      state.camera.yaw -= (e.clientX - drag[0]) * 0.01;
      state.camera.pitch = Math.max(-0.2, Math.min(1.45, state.camera.pitch + (e.clientY - drag[1]) * 0.01));
      drag = [e.clientX, e.clientY];
      if (state.frame && state.frame.scene) drawWorld(state.frame.scene);
    });
    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      if (!state.camera) return;
      state.camera.zoom = Math.max(0.3, Math.min(8, state.camera.zoom * (e.deltaY < 0 ? 1.1 : 1 / 1.1)));
      if (state.frame && state.frame.scene) drawWorld(state.frame.scene);
    }, { passive: false });
    canvas.addEventListener('dblclick', () => {
      resetCamera();
      if (state.frame && state.frame.scene) drawWorld(state.frame.scene);
    });
  }

  // -------------------------------------------------------------- controls

  function setupControls() {
    $('btn-pause').onclick = () => send('pause');
    $('btn-resume').onclick = () => send('resume');
    $('btn-step').onclick = () => send('step ' + $('step-count').value.trim());
    $('btn-until').onclick = () => send('until ' + $('until-time').value.trim());
    $('btn-scale').onclick = () => send('scale ' + $('scale-value').value.trim());
    $('btn-revoke').onclick = () => {
      const name = $('revoke-name').value;
      if (name) send('revoke ' + name);
    };
    const command = () => {
      const text = $('command').value;
      send(text);
      $('command').value = '';
    };
    $('btn-command').onclick = command;
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const token = $('token-input').value.trim();
      $('token-input').value = '';
      if (!token) return;
      sessionStorage.setItem(TOKEN_KEY, token);
      if (state.ws) state.ws.close(); // reconnects with the token in its hello
    });
    $('command').addEventListener('keydown', (e) => { if (e.key === 'Enter') command(); });
  }

  takeTokenFromFragment();
  setupControls();
  setupCamera();
  connect();
})();
