'use strict';
// The operator's page. Every value from the host (a plugin's name, version
// or error, an upstream's tool names) is put into the page as text
// (textContent), never as markup. Every action is a POST carrying the
// admin key in the Authorization header, which no other site can make a
// browser send.
(function () {
  var KEY = 'aiod.admin.key';
  var key = sessionStorage.getItem(KEY) || '';
  var statePoll = 500, upstreamPoll = 5000;
  var timers = [];
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  // table fills box with a table of rows (arrays of cells: a string or a
  // Node each), or says there is nothing.
  function table(box, headers, rows, empty) {
    if (!rows.length) { box.replaceChildren(el('p', empty, 'empty')); return; }
    var t = el('table'), head = el('tr');
    headers.forEach(function (h) { head.appendChild(el('th', h)); });
    t.appendChild(el('thead')).appendChild(head);
    var body = t.appendChild(el('tbody'));
    rows.forEach(function (r) {
      var tr = body.appendChild(el('tr'));
      if (r.id) tr.dataset.row = r.id;
      r.cells.forEach(function (c) {
        var td = tr.appendChild(el('td'));
        if (c instanceof Node) td.appendChild(c); else td.textContent = c === undefined || c === null ? '' : String(c);
      });
    });
    box.replaceChildren(t);
  }

  function Refused(msg) { this.message = msg; }

  function api(method, path, body) {
    var opt = { method: method, headers: { 'Authorization': 'Bearer ' + key }, cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (body !== undefined) { opt.headers['Content-Type'] = 'application/json'; opt.body = JSON.stringify(body); }
    return fetch(path, opt).then(function (r) {
      return r.json().catch(function () { return null; }).then(function (j) {
        if (r.status === 401) throw new Refused('the host refused this key (HTTP 401)');
        if (!r.ok || !j || j.success === false) {
          var m = j && (typeof j.error === 'string' ? j.error : j.error && j.error.message);
          throw new Error(m || ('HTTP ' + r.status));
        }
        return j.data;
      });
    });
  }

  function quota(now, limit) { return limit ? now + ' / ' + limit : String(now); }
  function short(d) { return d ? d.slice(0, 12) : ''; }
  function mono(text, title) { var c = el('code', text); if (title) c.title = title; return c; }

  function renderState(s) {
    $('generation').textContent = 'generation ' + s.generation + ', engine ' + s.engine;
    table($('plugins'), ['plugin', 'version', 'digest', 'signature', 'engine', 'warm', 'state', 'tools', 'errors'],
      s.plugins.map(function (p) {
        var errs = [];
        if (p.last_load_error) errs.push('newest version refused: ' + p.last_load_error);
        Object.keys(p.configuration_refused || {}).forEach(function (k) { errs.push(k + ': ' + p.configuration_refused[k]); });
        return { id: p.name, cells: [p.name + (p.builtin ? ' (built-in)' : ''), p.version, mono(short(p.sha256), p.sha256),
          p.signature, p.engine, p.warm, p.dormant ? 'dormant' : 'compiled', p.tools.join(', '), el('span', errs.join('; '), 'error')] };
      }), 'no plugins');
    var refused = Object.keys(s.refused || {});
    if (refused.length) {
      var ul = el('ul');
      refused.forEach(function (n) { ul.appendChild(el('li', n + ': ' + s.refused[n], 'error')); });
      $('refusedpkgs').replaceChildren(el('p', 'Refused packages:'), ul);
    } else $('refusedpkgs').replaceChildren();
    $('policyerror').hidden = !s.policy_error;
    $('policyerror').textContent = s.policy_error ? 'policy file refused (the previous policy applies): ' + s.policy_error : '';
    table($('tenants'), ['tenant', 'calls in flight', 'calls/min tokens left', 'instances', 'sessions', 'warm instances'],
      s.tenants.map(function (t) {
        var q = t.quotas || {};
        return { id: t.name, cells: [t.name + (t.unrestricted ? ' (unrestricted)' : ''),
          q.concurrent_calls ? quota(t.in_flight, q.concurrent_calls) : 'no quota',
          q.calls_per_minute ? Math.floor(t.tokens_left) + ' (' + q.calls_per_minute + '/min)' : 'no quota',
          quota(t.instances, q.instances), quota(t.sessions, q.sessions), t.warm] };
      }), 'no tenants');
    table($('calls'), ['time', 'tenant', 'method', 'tool', 'outcome', 'ms', 'bytes'],
      s.calls.map(function (c) {
        var out = c.outcome + (c.code ? ' (' + c.code + ')' : '') + (c.quota ? ' ' + c.quota : '') + (c.reason ? ': ' + c.reason : '');
        return { cells: [c.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z'), c.tenant, c.method, c.tool + (c.via ? ' via ' + c.via : ''),
          el('span', out, c.outcome === 'ok' ? 'ok' : 'warn'), c.duration_ms, c.result_bytes] };
      }), 'no calls yet');
    $('status').textContent = 'updated ' + new Date().toLocaleTimeString();
  }

  function renderUpstreams(list) {
    table($('upstreams'), ['server', 'url', 'reachable', 'tools', 'pins', 'withheld tools'],
      list.map(function (u) {
        var w;
        if (!u.pinned) w = el('span', 'pins off', 'empty');
        else if (!u.withheld.length) w = el('span', 'none', 'ok');
        else {
          w = el('ul', null, 'withheld');
          u.withheld.forEach(function (t) {
            var li = w.appendChild(el('li'));
            li.appendChild(el('code', t.tool));
            li.appendChild(document.createTextNode(' ' + t.kind + (t.reason ? ': ' + t.reason : '')));
            (t.fields || []).forEach(function (f) {
              li.appendChild(el('div', f.field + ': ' + (f.old || '(absent)') + ' → ' + (f.new || '(absent)'), 'mono'));
            });
            if (t.digest) {
              var b = li.appendChild(el('button', 'Accept ' + short(t.digest.replace('sha256:', ''))));
              b.type = 'button';
              b.className = 'accept';
              b.addEventListener('click', function () { accept(u.name, t.tool, t.digest, b); });
            }
          });
        }
        return { id: u.name, cells: [u.name, mono(u.url), el('span', u.reachable ? 'yes' : 'no', u.reachable ? 'ok' : 'error'),
          u.tools, u.pinned ? 'on' : 'off', w] };
      }), 'no upstream servers');
  }

  function notice(msg, isError) {
    var n = $('notice');
    n.hidden = false;
    n.className = isError ? 'notice error' : 'notice';
    n.textContent = msg;
  }

  function fail(e) {
    if (e instanceof Refused) { refuse(e.message); return; }
    $('status').textContent = 'error: ' + e.message;
  }

  function accept(server, tool, digest, button) {
    button.disabled = true;
    api('POST', 'upstreams/accept', { server: server, tool: tool, digest: digest }).then(function () {
      notice('accepted ' + tool + ' of ' + server);
      return pollUpstreams();
    }).catch(function (e) { button.disabled = false; fail(e); if (!(e instanceof Refused)) notice('not accepted: ' + e.message, true); });
  }

  function reload() {
    $('reload').disabled = true;
    api('POST', 'reload').then(function (r) {
      var parts = ['reload: generation ' + r.generation];
      ['added', 'removed', 'changed', 'kept'].forEach(function (k) { if (r[k] && r[k].length) parts.push(k + ' ' + r[k].join(', ')); });
      if (r.errors && r.errors.length) parts.push('errors: ' + r.errors.join('; '));
      if (r.policy_error) parts.push('policy refused: ' + r.policy_error);
      notice(parts.join('; '), (r.errors && r.errors.length) || r.policy_error);
      return pollState();
    }).catch(function (e) { fail(e); if (!(e instanceof Refused)) notice('reload failed: ' + e.message, true); })
      .then(function () { $('reload').disabled = false; });
  }

  var busy = {};
  function once(name, f) {
    return function () {
      if (busy[name]) return Promise.resolve();
      busy[name] = true;
      return f().catch(fail).then(function () { busy[name] = false; });
    };
  }
  var pollState = once('state', function () { return api('GET', 'state').then(renderState); });
  var pollUpstreams = once('upstreams', function () { return api('GET', 'upstreams').then(renderUpstreams); });

  function stop() { timers.forEach(clearInterval); timers = []; }

  function refuse(msg) {
    stop();
    key = '';
    sessionStorage.removeItem(KEY);
    ['plugins', 'refusedpkgs', 'tenants', 'upstreams', 'calls'].forEach(function (id) { $(id).replaceChildren(); });
    $('panels').hidden = true;
    $('actions').hidden = true;
    $('login').hidden = false;
    $('refused').hidden = !msg;
    $('refused').textContent = msg || '';
    $('status').textContent = 'not connected';
  }

  function start() {
    stop();
    // nothing is shown before the host has taken the key
    api('GET', 'state').then(function (s) {
      $('login').hidden = true;
      $('refused').hidden = true;
      $('panels').hidden = false;
      $('actions').hidden = false;
      renderState(s);
      pollUpstreams();
      timers.push(setInterval(pollState, statePoll), setInterval(pollUpstreams, upstreamPoll));
    }).catch(fail);
  }

  $('login').addEventListener('submit', function (ev) {
    ev.preventDefault();
    key = $('key').value;
    $('key').value = '';
    sessionStorage.setItem(KEY, key);
    start();
  });
  $('reload').addEventListener('click', reload);
  $('forget').addEventListener('click', function () { refuse(''); });
  if (key) start(); else refuse('');
})();
