// viewer.js renders Parley's history viewer from the GraphQL API: the list of
// conversations (/viewer/) and one conversation (/viewer/c/{id}), kept live through the
// same subscriptions every client uses (graphql-transport-ws, the graphqlWs global of
// the vendored graphql-ws client). Plain JavaScript, no build step.
//
// Safety: text from the API is only ever set as textContent; innerHTML takes only the
// API's `html` fields, which the server renders from Markdown and sanitizes (bluemonday).
// The page's Content-Security-Policy forbids inline script, so even a payload that got
// through could not run.
(function () {
  'use strict';

  var main = document.getElementById('main');
  var banner = document.getElementById('banner');
  var announcer = document.getElementById('announce');
  var endpoint = new URL(main.dataset.endpoint, location.href);
  var page = main.dataset.page;
  var conversationId = main.dataset.id;
  var params = new URLSearchParams(location.search);
  var hash = new URLSearchParams(location.hash.slice(1));

  // Seed 004's roles: each has its label, icon and color (the color is in viewer.css,
  // by the role-* class). The label shown is the API's `label`, which follows the role.
  var ROLES = {
    USER: { label: 'User', icon: 'M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8zM4 21a8 8 0 0 1 16 0' },
    ASSISTANT: { label: 'Assistant', icon: 'M7 7h10v10H7zM10 2v5M14 2v5M10 17v5M14 17v5M2 10h5M2 14h5M17 10h5M17 14h5' },
    INVOCATION: { label: 'Tool Call', icon: 'M13 3l8 8-3 3-8-8zM11 9l-8 8 4 4 8-8' },
    RESULT: { label: 'Tool Result', icon: 'M6 2h8l4 4v16H6zM14 2v4h4M9 12h6M9 16h6' },
    SUPERVISOR: { label: 'Supervisor', icon: 'M12 2l8 3v6c0 5-3.5 9-8 11-4.5-2-8-6-8-11V5z' },
    DOCUMENT: { label: 'Document', icon: 'M9 12l6-6a3 3 0 0 1 4 4l-8 8a5 5 0 0 1-7-7l7-7' },
  };

  // icon draws a role's icon (an SVG path: no image to load, the CSP allows none).
  function icon(d) {
    var ns = 'http://www.w3.org/2000/svg';
    var svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('class', 'role-icon');
    svg.setAttribute('aria-hidden', 'true');
    var p = document.createElementNS(ns, 'path');
    p.setAttribute('d', d);
    svg.appendChild(p);
    return svg;
  }

  // ---- credentials ------------------------------------------------------------------
  // A share link carries its credential in the fragment (#share=…), which browsers never
  // send to a server; the page is then read-only. Otherwise, in auth mode, the page asks
  // for a token once and keeps it in this tab's sessionStorage, as the playground keeps
  // its headers (it also takes the playground's Authorization header, if it has one).
  var TOKEN_KEY = 'parley:viewer-token';
  var shareToken = hash.get('share') || '';
  var readOnly = shareToken !== '';

  function storedToken() {
    try {
      var t = sessionStorage.getItem(TOKEN_KEY);
      if (t) return t;
      var h = JSON.parse(sessionStorage.getItem('parley:headers') || '{}');
      for (var k in h) {
        if (k.toLowerCase() === 'authorization' && typeof h[k] === 'string') {
          return h[k].replace(/^\s*bearer\s+/i, '').trim();
        }
      }
    } catch (e) { /* storage disabled or headers not JSON */ }
    return '';
  }
  function token() { return shareToken || storedToken(); }

  // ---- GraphQL over HTTP ------------------------------------------------------------
  function GraphQLError(message, code) {
    var e = new Error(message);
    e.code = code;
    return e;
  }

  function gql(query, variables) {
    var headers = { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json' };
    var t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    return fetch(endpoint.href, { method: 'POST', headers: headers, body: JSON.stringify({ query: query, variables: variables || {} }) })
      .then(function (resp) {
        return resp.json().catch(function () { throw GraphQLError('The server answered ' + resp.status + '.', 'HTTP_' + resp.status); });
      })
      .then(function (body) {
        if (body.errors && body.errors.length) {
          var e = body.errors[0];
          throw GraphQLError(e.message, (e.extensions && e.extensions.code) || '');
        }
        return body.data;
      });
  }

  // ---- subscriptions ----------------------------------------------------------------
  var wsClient = null;
  function ws() {
    if (wsClient) return wsClient;
    var url = new URL(endpoint.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    wsClient = graphqlWs.createClient({
      url: url.href,
      lazy: true,
      retryAttempts: Infinity,
      shouldRetry: function () { return true; },
      connectionParams: function () {
        var t = token();
        return t ? { Authorization: 'Bearer ' + t } : {};
      },
      on: {
        connected: function () { setLive(true); },
        closed: function () { setLive(false); },
      },
    });
    return wsClient;
  }

  // subscribe runs a subscription that resumes where it stopped: graphql-ws sends the
  // same payload object again when it reconnects, so each event's cursor is written
  // into payload.variables.after (resumeVar) before the next reconnection.
  function subscribe(query, variables, resumeVar, onData) {
    var payload = { query: query, variables: variables };
    return ws().subscribe(payload, {
      next: function (msg) {
        if (msg.errors && msg.errors.length) {
          showError(msg.errors[0].message);
          return;
        }
        var cursor = onData(msg.data);
        if (cursor && resumeVar) payload.variables[resumeVar] = cursor;
      },
      error: function (err) {
        showError('Live updates stopped: ' + describe(err));
        setLive(false);
      },
      complete: function () {},
    });
  }

  function describe(err) {
    if (!err) return 'unknown error';
    if (Array.isArray(err)) return err.map(function (e) { return e.message; }).join('; ');
    if (err.reason) return err.reason;
    if (err.message) return err.message;
    if (err.code) return 'connection closed (' + err.code + ')';
    return String(err);
  }

  // ---- small DOM helpers ------------------------------------------------------------
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? '' : v);
      }
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }

  // sanitizedHTML puts html from an API `html` field (rendered and sanitized by the
  // server) into a new element, and highlights its fenced code by language.
  function sanitizedHTML(cls, html) {
    var d = el('div', { class: cls });
    d.innerHTML = html;
    highlight(d);
    return d;
  }

  function highlight(root) {
    if (!window.hljs) return;
    root.querySelectorAll('pre code[class*="language-"]').forEach(function (code) {
      var lang = (code.className.match(/language-([\w+#.-]+)/) || [])[1];
      if (lang && hljs.getLanguage(lang)) {
        hljs.highlightElement(code);
      }
    });
  }

  function when(t) {
    if (!t) return '';
    var d = new Date(t);
    return isNaN(d) ? t : d.toLocaleString();
  }

  function timeEl(t) {
    return el('time', { datetime: t, title: t, text: when(t) });
  }

  function prettyJSON(v) {
    if (typeof v === 'string') {
      try { return JSON.stringify(JSON.parse(v), null, 2); } catch (e) { return v; }
    }
    return JSON.stringify(v, null, 2);
  }

  function codeBlock(text, lang) {
    var code = el('code', { class: lang ? 'language-' + lang : null, text: text });
    if (lang && window.hljs && hljs.getLanguage(lang)) hljs.highlightElement(code);
    return el('pre', { class: 'code' }, [code]);
  }

  function announce(text) {
    announcer.textContent = text;
  }

  function setLive(on) {
    document.body.classList.toggle('live', on);
    var s = document.getElementById('live-state');
    if (s) s.textContent = on ? 'Live' : 'Reconnecting…';
  }

  function showError(message) {
    var box = document.getElementById('error');
    if (!box) {
      box = el('p', { id: 'error', class: 'error', role: 'alert' });
      main.insertBefore(box, main.firstChild);
    }
    box.textContent = message;
  }

  function showBanner() {
    if (!readOnly) return;
    banner.hidden = false;
    banner.textContent = 'Read-only shared view';
    document.getElementById('home').removeAttribute('href');
    document.querySelector('header nav').hidden = true;
  }

  // askToken shows the form that asks for a token (auth mode), then calls done.
  function askToken(message, done) {
    main.textContent = '';
    var input = el('input', { id: 'token', type: 'password', autocomplete: 'off', required: true, 'aria-describedby': 'token-help' });
    var form = el('form', { class: 'token-form' }, [
      el('h1', { text: 'Sign in' }),
      el('p', { id: 'token-help', text: message + ' Paste an API token (parley token create) or a JWT: it is kept for this tab only.' }),
      el('label', { for: 'token', text: 'Token' }),
      input,
      el('button', { type: 'submit', text: 'Continue' }),
    ]);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      try { sessionStorage.setItem(TOKEN_KEY, input.value.trim()); } catch (e) { /* kept for the page only */ }
      if (wsClient) { wsClient.dispose(); wsClient = null; }
      done();
    });
    main.appendChild(form);
    input.focus();
  }

  function failed(err, retry) {
    if (!readOnly && (err.code === 'UNAUTHENTICATED' || err.code === 'HTTP_401')) {
      askToken(token() ? 'That token was refused.' : 'This server requires a token.', retry);
      return;
    }
    main.textContent = '';
    main.appendChild(el('p', { class: 'error', role: 'alert', text: err.message }));
  }

  // ---- the list of conversations ----------------------------------------------------
  var LIST = 'query List($after: String) { conversations(first: 50, after: $after) { totalCount changesCursor ' +
    'pageInfo { hasNextPage endCursor } edges { node { id title updatedAt messageCount } } } }';
  var LIST_CHANGES = 'subscription Changes($after: String) { conversationsChanged(after: $after) { cursor kind conversationId ' +
    'conversation { id title updatedAt messageCount } } }';

  function conversationRow(c) {
    var li = el('li', { class: 'conv', 'data-id': c.id }, [
      el('a', { href: '/viewer/c/' + encodeURIComponent(c.id), class: 'conv-title', text: c.title || 'Untitled' }),
      el('span', { class: 'conv-count', text: c.messageCount + (c.messageCount === 1 ? ' message' : ' messages') }),
      el('span', { class: 'conv-when' }, [timeEl(c.updatedAt)]),
    ]);
    return li;
  }

  // ---- search (the list page; a share link's credential cannot search) -------------
  var SEARCH = 'query Search($q: String!) { ' +
    'searchConversations(query: $q, prefix: true, first: 20) { edges { node { conversation { id title updatedAt messageCount } title { html } titleMatched messageHits } } } ' +
    'search(query: $q, prefix: true, first: 30) { edges { node { message { ... on MessageBase { id role label position } } conversation { id title } ' +
    'branchLeafId messageCursor snippet { html } } } } }';
  var SEARCH_DELAY = 200; // ms after the last keystroke

  // hitHref links to a conversation opened at a message: its branch, and its cursor.
  function hitHref(conversationId, leaf, cursor) {
    var u = new URL('/viewer/c/' + encodeURIComponent(conversationId), location.href);
    if (leaf) u.searchParams.set('branch', leaf);
    if (cursor) u.searchParams.set('at', cursor);
    return u.pathname + u.search;
  }

  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : many); }

  // searchBox returns the search form and the results region; while the box holds a
  // query, the results replace `live` (the normal list), which comes back when it is empty.
  function searchBox(live) {
    var input = el('input', { id: 'search', type: 'search', autocomplete: 'off', spellcheck: 'false', placeholder: 'Search messages and titles',
      'aria-describedby': 'search-help', 'aria-controls': 'search-results' });
    var form = el('form', { class: 'search', role: 'search', onsubmit: function (ev) { ev.preventDefault(); run(); } }, [
      el('label', { for: 'search', text: 'Search' }),
      input,
      el('span', { id: 'search-help', class: 'sr-only', text: 'Results appear as you type: conversations first, then messages; the arrow keys move through them, Escape clears.' }),
    ]);
    var results = el('section', { id: 'search-results', class: 'search-results', 'aria-label': 'Search results', 'aria-live': 'polite', hidden: true });
    var seq = 0;
    var timer = null;
    function clear() {
      seq++;
      results.hidden = true;
      results.textContent = '';
      live.hidden = false;
    }
    function run() {
      clearTimeout(timer);
      var q = input.value.trim();
      if (!q) { clear(); return; }
      var mine = ++seq;
      results.setAttribute('aria-busy', 'true');
      gql(SEARCH, { q: q }).then(function (d) {
        if (mine !== seq) return; // a newer query is on its way
        showResults(d);
      }, function (err) {
        if (mine !== seq) return;
        results.textContent = '';
        results.appendChild(el('p', { class: 'error search-error', role: 'alert', 'data-code': err.code || null,
          text: err.code === 'SEARCH_QUERY_EMPTY' ? 'Nothing to search for: type a word.' : err.message }));
      }).finally(function () {
        if (mine === seq) results.setAttribute('aria-busy', 'false');
      });
      results.hidden = false;
      live.hidden = true;
    }
    function showResults(d) {
      results.textContent = '';
      var convs = d.searchConversations.edges;
      var hits = d.search.edges;
      results.appendChild(el('h2', { text: plural(convs.length, 'conversation', 'conversations') }));
      var cl = el('ul', { class: 'convs', id: 'search-conversations', 'aria-label': 'Matching conversations' });
      convs.forEach(function (e) {
        var h = e.node;
        var title = el('a', { href: '/viewer/c/' + encodeURIComponent(h.conversation.id), class: 'conv-title', title: h.conversation.title || null });
        title.innerHTML = h.title.html; // escaped by the server, matches in <mark>
        if (!title.textContent) title.textContent = 'Untitled';
        cl.appendChild(el('li', { class: 'conv', 'data-id': h.conversation.id }, [
          title,
          el('span', { class: 'conv-count', text: plural(h.messageHits, 'message matches', 'messages match') }),
          el('span', { class: 'conv-when' }, [timeEl(h.conversation.updatedAt)]),
        ]));
      });
      results.appendChild(cl);
      results.appendChild(el('h2', { text: plural(hits.length, 'message', 'messages') + (hits.length === 30 ? ' (the best 30)' : '') }));
      var hl = el('ul', { class: 'hits', id: 'search-hits', 'aria-label': 'Matching messages' });
      hits.forEach(function (e) {
        var h = e.node;
        var m = h.message;
        var snippet = el('span', { class: 'hit-snippet' });
        snippet.innerHTML = h.snippet.html; // escaped by the server, matches in <mark>
        hl.appendChild(el('li', { class: 'hit role-' + String(m.role || '').toLowerCase(), 'data-id': m.id }, [
          el('a', { class: 'hit-link', href: hitHref(h.conversation.id, h.branchLeafId, h.messageCursor) }, [
            el('span', { class: 'hit-head' }, [roleBadge(m), el('span', { class: 'hit-conv', text: h.conversation.title || 'Untitled' }),
              el('span', { class: 'pos', text: '#' + m.position })]),
            snippet,
          ]),
        ]));
      });
      results.appendChild(hl);
      if (!convs.length && !hits.length) results.appendChild(el('p', { class: 'empty', text: 'Nothing found.' }));
      announce(plural(convs.length, 'conversation', 'conversations') + ' and ' + plural(hits.length, 'message', 'messages') + ' found');
    }
    input.addEventListener('input', function () {
      clearTimeout(timer);
      if (!input.value.trim()) { clear(); return; }
      timer = setTimeout(run, SEARCH_DELAY);
    });
    input.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape' && input.value) { input.value = ''; clear(); ev.preventDefault(); }
    });
    // Arrow keys move from the box through the results' links and back.
    [input, results].forEach(function (n) {
      n.addEventListener('keydown', function (ev) {
        if (ev.key !== 'ArrowDown' && ev.key !== 'ArrowUp') return;
        var links = Array.prototype.slice.call(results.querySelectorAll('a'));
        if (results.hidden || !links.length) return;
        var i = links.indexOf(document.activeElement);
        var next = ev.key === 'ArrowDown' ? i + 1 : i - 1;
        if (next < 0) input.focus();
        else links[Math.min(next, links.length - 1)].focus();
        ev.preventDefault();
      });
    });
    return { form: form, results: results };
  }

  function startList() {
    document.title = 'Conversations · Parley';
    gql(LIST, {}).then(function (data) {
      var conns = data.conversations;
      main.textContent = '';
      var list = el('ul', { class: 'convs', id: 'conversations', 'aria-label': 'Conversations, most recently active first' });
      var more = el('button', { class: 'more', type: 'button', text: 'Load more' });
      var heading = el('div', { class: 'list-head' }, [
        el('h1', { text: 'Conversations' }),
        el('span', { id: 'live-state', class: 'live-state', text: 'Connecting…' }),
      ]);
      var live = el('div', { id: 'live-list' });
      var search = searchBox(live);
      main.appendChild(heading);
      main.appendChild(search.form);
      main.appendChild(search.results);
      main.appendChild(live);
      live.appendChild(el('p', { class: 'list-cols', 'aria-hidden': 'true' }, [
        el('span', { text: 'Title' }), el('span', { text: 'Messages' }), el('span', { text: 'Last activity' })]));
      live.appendChild(list);
      live.appendChild(more);
      if (conns.edges.length === 0) {
        live.insertBefore(el('p', { class: 'empty', id: 'empty', text: 'No conversations yet: create one through the API, or parley import a session.' }), list);
      }
      var endCursor = conns.pageInfo.endCursor;
      function add(edges) {
        edges.forEach(function (e) {
          if (!list.querySelector('[data-id="' + CSS.escape(e.node.id) + '"]')) list.appendChild(conversationRow(e.node));
        });
      }
      add(conns.edges);
      more.hidden = !conns.pageInfo.hasNextPage;
      more.addEventListener('click', function () {
        gql(LIST, { after: endCursor }).then(function (d) {
          add(d.conversations.edges);
          endCursor = d.conversations.pageInfo.endCursor;
          more.hidden = !d.conversations.pageInfo.hasNextPage;
        }, function (err) { showError(err.message); });
      });
      subscribe(LIST_CHANGES, { after: conns.changesCursor }, 'after', function (d) {
        var ev = d.conversationsChanged;
        var old = list.querySelector('[data-id="' + CSS.escape(ev.conversationId) + '"]');
        if (ev.kind === 'DELETED' || !ev.conversation) {
          if (old) old.remove();
        } else {
          var row = conversationRow(ev.conversation);
          if (old) old.remove();
          list.insertBefore(row, list.firstChild); // the newest activity goes on top
          var empty = document.getElementById('empty');
          if (empty) empty.remove();
          announce((ev.conversation.title || 'Untitled') + ' ' + ev.kind.toLowerCase());
        }
        return ev.cursor;
      });
    }, function (err) { failed(err, startList); });
  }

  // ---- one conversation -------------------------------------------------------------
  var MESSAGE = 'fragment M on Message { __typename ' +
    '... on MessageBase { id role label position createdAt parentId messageStatus statusReason hidden deletedAt ' +
    'siblings { count index ids } provenance { provider model } } ' +
    '... on TextMessage { parts { kind html text } } ' +
    '... on ToolRequestMessage { parts { kind html text } toolCalls { id callId name arguments argumentsRaw argumentsValid ' +
    'approvalStatus imported decision { status decidedBy reason decidedAt } } } ' +
    '... on ToolResultMessage { toolCallId toolName status output outputRaw html error { message stackTrace } durationMs executedAt truncated originalSize } ' +
    '... on ImageMessage { source { kind url base64 mediaType filePath } recognition { status modeUsed recognizedText visionAnalysis notice error { message } } } ' +
    '... on FileReferenceMessage { path startLine endLine resolution { status content truncated error { message } } } ' +
    '... on SystemControlMessage { kind from to params } ' +
    '... on MCPResourceMessage { serverName resourceUri mimeType retrievedAt truncated html } ' +
    '... on CompactionMessage { html coversThrough provider } ' +
    '... on UnknownMessage { type raw } }';
  var PAGE_SIZE = 50;
  var CONVERSATION = 'query Conversation($id: ID!, $branch: ID, $last: Int) { conversation(id: $id) { id title updatedAt messageCount ' +
    'branches(first: 100) { leaf { ... on MessageBase { id } } forkPosition length lastActivityAt active } ' +
    'messages(last: $last, branch: $branch) { totalCount pageInfo { hasPreviousPage startCursor endCursor } edges { cursor node { ...M } } } } } ' + MESSAGE;
  var OLDER = 'query Older($id: ID!, $branch: ID, $before: String) { conversation(id: $id) { messages(last: 100, before: $before, branch: $branch) { ' +
    'pageInfo { hasPreviousPage startCursor } edges { cursor node { ...M } } } } } ' + MESSAGE;
  // Opened at a message (a search hit: ?at=<its cursor>): a few messages before it, then
  // it and what follows, a page at a time toward the newest.
  var AT_BEFORE = 'query AtBefore($id: ID!, $branch: ID, $at: String!) { conversation(id: $id) { id title updatedAt messageCount ' +
    'branches(first: 100) { leaf { ... on MessageBase { id } } forkPosition length lastActivityAt active } ' +
    'messages(last: 10, before: $at, branch: $branch) { totalCount pageInfo { hasPreviousPage startCursor endCursor } edges { cursor node { ...M } } } } } ' + MESSAGE;
  var NEWER = 'query Newer($id: ID!, $branch: ID, $after: String) { conversation(id: $id) { messages(first: ' + PAGE_SIZE + ', after: $after, branch: $branch) { ' +
    'pageInfo { hasNextPage startCursor endCursor } edges { cursor node { ...M } } } } } ' + MESSAGE;
  var STREAM = 'subscription Stream($id: ID!, $after: String) { messageStream(conversationId: $id, after: $after) { cursor ' +
    'message { ...M } delta { messageId position seq deltas { kind index text toolCallId toolName } } } } ' + MESSAGE;
  var UPDATED = 'subscription Updated($id: ID!) { messageUpdated(conversationId: $id) { node { ...M } } } ' + MESSAGE;
  var SWITCH = 'mutation Switch($c: ID!, $m: ID!) { switchBranch(conversationId: $c, messageId: $m) { conversation { id } } }';
  var EXPORT = 'query Export($id: ID!, $format: TranscriptFormat!, $branch: ID, $repair: Boolean) { conversation(id: $id) { title transcript(format: $format, branch: $branch, repair: $repair) } }';
  var SHARE = 'mutation Share($c: ID!, $branch: ID, $expiresIn: Int!) { createShareLink(conversationId: $c, branch: $branch, expiresInSeconds: $expiresIn) { secret link { id expiresAt } } }';

  var state = {
    branch: params.get('branch') || null, // the message whose branch is viewed; null: the active branch
    at: params.get('at') || null, // the cursor of a message to open the page at (a search hit), or null
    hitId: null, // the message opened at, highlighted
    endCursor: null, // the newest message shown, while newer ones are not (hasNewer)
    hasNewer: false,
    loadingNewer: false,
    lastId: null, // the last message shown: live messages whose parent it is continue the view
    byId: {}, // message id -> its article
    calls: {}, // provider call id -> the tool call's element (a result attaches to it)
    pendingResults: {}, // provider call id -> a result shown before its call was loaded
    startCursor: null,
    hasOlder: false,
    loadingOlder: false,
  };

  function roleBadge(m) {
    var r = ROLES[m.role] || ROLES.SUPERVISOR;
    return el('span', { class: 'role' }, [
      icon(r.icon),
      el('span', { class: 'role-label', text: m.label || r.label }),
    ]);
  }

  function siblingSwitcher(m) {
    var s = m.siblings;
    if (!s || s.count < 2) return null;
    function go(i) {
      return function () { viewBranch(s.ids[i]); };
    }
    return el('span', { class: 'siblings', role: 'group', 'aria-label': 'Versions of this message' }, [
      el('button', { type: 'button', class: 'sib-prev', 'aria-label': 'Previous version', disabled: s.index === 0, onclick: go(s.index - 1), text: '\u2039' }),
      el('span', { class: 'sib-pos', text: (s.index + 1) + ' / ' + s.count }),
      el('button', { type: 'button', class: 'sib-next', 'aria-label': 'Next version', disabled: s.index >= s.count - 1, onclick: go(s.index + 1), text: '\u203A' }),
    ]);
  }

  function renderParts(m, box) {
    (m.parts || []).forEach(function (p, i) {
      var node;
      switch (p.kind) {
        case 'TEXT':
          node = sanitizedHTML('md part-text', p.html);
          break;
        case 'THINKING':
          node = el('details', { class: 'thinking' }, [el('summary', { text: 'Thinking' }), sanitizedHTML('md', p.html)]);
          break;
        case 'REDACTED_THINKING':
          node = el('p', { class: 'marker', text: 'Thinking (redacted by the provider)' });
          break;
        default:
          node = el('p', { class: 'marker', text: p.kind.toLowerCase().replace('_', ' ') + ' block' });
      }
      node.dataset.part = i;
      box.appendChild(node);
    });
  }

  function approval(call) {
    var d = call.decision;
    var text = call.approvalStatus.toLowerCase();
    if (d && d.decidedBy) text += ' by ' + d.decidedBy;
    if (d && d.reason) text += ': ' + d.reason;
    if (call.imported && !(d && d.reason)) text += ' (imported)';
    return el('span', { class: 'approval approval-' + call.approvalStatus.toLowerCase(), 'data-call-approval': call.callId, text: text });
  }

  function toolCall(call) {
    var args = call.argumentsValid === false && call.argumentsRaw !== null ? call.argumentsRaw : prettyJSON(call.arguments);
    var slot = el('div', { class: 'result-slot' });
    var box = el('details', { class: 'tool-call', open: true, 'data-call-id': call.callId }, [
      el('summary', {}, [el('span', { class: 'tool-name', text: call.name }), ' ', approval(call)]),
      el('div', { class: 'args', 'aria-label': 'Arguments' }, [codeBlock(args, 'json')]),
      slot,
    ]);
    state.calls[call.callId] = box;
    var waiting = state.pendingResults[call.callId];
    if (waiting) {
      delete state.pendingResults[call.callId];
      slot.appendChild(waiting);
      waiting.classList.add('attached');
    }
    return box;
  }

  function toolResult(m, box) {
    var facts = [m.status === 'ERROR' ? 'error' : 'success'];
    if (m.durationMs !== null && m.durationMs !== undefined) facts.push(m.durationMs + ' ms');
    if (m.truncated) facts.push('truncated' + (m.originalSize ? ' from ' + m.originalSize + ' bytes' : ''));
    box.appendChild(el('p', { class: 'result-head' }, [
      el('span', { class: 'tool-name', text: m.toolName }), ' ',
      el('span', { class: 'status status-' + m.status.toLowerCase(), text: facts.join(' · ') }),
    ]));
    if (m.error) {
      box.appendChild(el('div', { class: 'tool-error', role: 'note' }, [el('strong', { text: 'Error: ' }), m.error.message]));
      if (m.error.stackTrace) box.appendChild(el('details', {}, [el('summary', { text: 'Stack trace' }), codeBlock(m.error.stackTrace)]));
    }
    var out = m.outputRaw !== null && m.outputRaw !== undefined ? m.outputRaw : (m.output !== null && m.output !== undefined ? m.output : null);
    var body = el('div', { class: 'output' });
    if (m.html) body.appendChild(sanitizedHTML('md', m.html));
    if (out !== null) {
      var text = typeof out === 'string' ? out : prettyJSON(out);
      body.appendChild(codeBlock(typeof out === 'string' ? prettyJSON(out) : text, 'json'));
    }
    box.appendChild(el('details', { class: 'output-box', open: body.textContent.length < 2000 }, [el('summary', { text: 'Output' }), body]));
  }

  function imageMessage(m, box) {
    var s = m.source;
    if (s.kind === 'BASE64' && s.base64 && /^image\/(png|jpeg|gif|webp)$/.test(s.mediaType || '')) {
      var alt = (m.recognition && m.recognition.recognizedText) || 'Image';
      box.appendChild(el('img', { class: 'image', src: 'data:' + s.mediaType + ';base64,' + s.base64, alt: alt }));
    } else if (s.kind === 'URL' && s.url) {
      box.appendChild(el('p', {}, ['Image at ', el('a', { href: /^https?:/i.test(s.url) ? s.url : null, rel: 'noopener noreferrer nofollow', text: s.url })]));
    } else if (s.filePath) {
      box.appendChild(el('p', {}, ['Image file ', el('code', { text: s.filePath })]));
    }
    var r = m.recognition;
    if (r) {
      var parts = [];
      if (r.recognizedText) parts.push(el('pre', { class: 'recognized', text: r.recognizedText }));
      if (r.visionAnalysis) parts.push(el('p', { text: r.visionAnalysis }));
      if (r.notice) parts.push(el('p', { class: 'marker', text: r.notice }));
      if (r.error) parts.push(el('p', { class: 'tool-error', text: r.error.message }));
      box.appendChild(el('details', { class: 'recognition', open: true }, [el('summary', { text: 'Recognized text' + (r.modeUsed ? ' (' + r.modeUsed.toLowerCase() + ')' : '') })].concat(parts)));
    }
  }

  function fileMessage(m, box) {
    var range = m.startLine ? ':' + m.startLine + (m.endLine ? '-' + m.endLine : '') : '';
    box.appendChild(el('p', { class: 'source' }, ['File ', el('code', { text: m.path + range })]));
    var r = m.resolution;
    if (r && r.content !== null && r.content !== undefined) {
      var ext = (m.path.match(/\.(\w+)$/) || [])[1];
      box.appendChild(el('details', { class: 'file-content' }, [el('summary', { text: 'Content' + (r.truncated ? ' (truncated)' : '') }), codeBlock(r.content, ext)]));
    } else if (r && r.error) {
      box.appendChild(el('p', { class: 'tool-error', text: r.error.message }));
    }
  }

  function mcpMessage(m, box) {
    box.appendChild(el('p', { class: 'source' }, ['MCP resource ', el('code', { text: m.resourceUri }), ' from ', el('strong', { text: m.serverName })]));
    box.appendChild(el('details', { class: 'file-content' }, [el('summary', { text: 'Content' + (m.truncated ? ' (truncated)' : '') }), sanitizedHTML('md', m.html)]));
  }

  // messageArticle renders one message as an article; a system control event is a small
  // marker instead.
  function messageArticle(m) {
    if (m.__typename === 'SystemControlMessage') {
      var what = m.kind === 'BRANCH_SWITCH' ? 'Switched branch' : 'Mode ' + (m.from ? m.from + ' \u2192 ' : '') + (m.to || '');
      return el('div', { class: 'control-marker', role: 'separator', 'data-id': m.id, 'aria-label': what }, [
        el('span', { text: what }), ' ', timeEl(m.createdAt)]);
    }
    var head = el('header', { class: 'msg-head' }, [
      roleBadge(m),
      el('span', { class: 'pos', text: '#' + m.position }),
      timeEl(m.createdAt),
      m.provenance && m.provenance.model ? el('span', { class: 'model', text: m.provenance.model }) : null,
      m.messageStatus !== 'COMPLETED' ? el('span', { class: 'msg-status status-' + m.messageStatus.toLowerCase(), text: m.messageStatus.toLowerCase() + (m.statusReason ? ': ' + m.statusReason : '') }) : null,
      m.hidden ? el('span', { class: 'marker', text: 'hidden from LLMs' }) : null,
      siblingSwitcher(m),
    ]);
    var body = el('div', { class: 'msg-body' });
    var art = el('article', { class: 'msg role-' + m.role.toLowerCase() + ' kind-' + m.__typename, tabindex: '0', 'data-id': m.id, 'data-role': m.role, 'aria-label': m.label + ', message ' + m.position }, [head, body]);
    if (m.deletedAt) {
      body.appendChild(el('p', { class: 'marker', text: 'Deleted ' + when(m.deletedAt) }));
      return art;
    }
    switch (m.__typename) {
      case 'TextMessage':
        renderParts(m, body);
        break;
      case 'ToolRequestMessage':
        renderParts(m, body);
        m.toolCalls.forEach(function (c) { body.appendChild(toolCall(c)); });
        break;
      case 'ToolResultMessage':
        toolResult(m, body);
        art.dataset.resultFor = m.toolCallId;
        break;
      case 'ImageMessage':
        imageMessage(m, body);
        break;
      case 'FileReferenceMessage':
        fileMessage(m, body);
        break;
      case 'MCPResourceMessage':
        mcpMessage(m, body);
        break;
      case 'CompactionMessage':
        body.appendChild(el('details', {}, [el('summary', { text: 'Compaction of messages 1 to ' + m.coversThrough }), sanitizedHTML('md', m.html || '')]));
        break;
      default:
        body.appendChild(el('details', {}, [el('summary', { text: 'Unknown message type ' + m.type }), codeBlock(prettyJSON(m.raw), 'json')]));
    }
    return art;
  }

  // place puts a rendered message where it belongs: a tool result into its call's slot
  // when the call is shown (or waiting for it), anything else before `before` in the feed.
  function place(feed, m, art, before) {
    var old = state.byId[m.id];
    state.byId[m.id] = art;
    if (old) {
      old.replaceWith(art);
      return;
    }
    if (m.__typename === 'ToolResultMessage') {
      var call = state.calls[m.toolCallId];
      if (call) {
        art.classList.add('attached');
        call.querySelector('.result-slot').appendChild(art);
        return;
      }
    }
    feed.insertBefore(art, before || null);
  }

  function renderInto(feed, edges, before) {
    edges.forEach(function (e) {
      var m = e.node;
      place(feed, m, messageArticle(m), before);
    });
    // A page loaded older than its results: the results move into their calls.
    feed.querySelectorAll('article[data-result-for]:not(.attached)').forEach(function (r) {
      var call = state.calls[r.dataset.resultFor];
      if (call && !call.contains(r)) {
        r.classList.add('attached');
        call.querySelector('.result-slot').appendChild(r);
      }
    });
  }

  function viewBranch(messageId) {
    var u = new URL(location.href);
    if (messageId) u.searchParams.set('branch', messageId); else u.searchParams.delete('branch');
    u.searchParams.delete('at');
    history.pushState(null, '', u.href);
    state.branch = messageId;
    state.at = null;
    loadConversation();
  }

  window.addEventListener('popstate', function () {
    var p = new URLSearchParams(location.search);
    state.branch = p.get('branch');
    state.at = p.get('at');
    loadConversation();
  });

  function download(name, type, text) {
    var a = el('a', { href: URL.createObjectURL(new Blob([text], { type: type })), download: name });
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  function exportAs(format) {
    // The LLM formats close calls left unanswered (a session cut short) rather than
    // refusing them; Markdown and Parley JSON keep the history as it is.
    var repair = /^(OPENAI_|ANTHROPIC_)/.test(format) ? true : null;
    gql(EXPORT, { id: conversationId, format: format, branch: state.branch, repair: repair }).then(function (d) {
      var t = d.conversation.transcript;
      var base = (d.conversation.title || 'conversation').replace(/[^\w.-]+/g, '-').slice(0, 60) || 'conversation';
      if (format === 'MARKDOWN') download(base + '.md', 'text/markdown', t);
      else download(base + '.' + format.toLowerCase() + '.json', 'application/json', JSON.stringify(t, null, 2));
    }, function (err) { showError('Export failed: ' + err.message); });
  }

  var subs = [];
  function unsubscribeAll() {
    subs.forEach(function (u) { u(); });
    subs = [];
  }

  function loadConversation() {
    unsubscribeAll();
    state.byId = {}; state.calls = {}; state.pendingResults = {};
    state.hitId = null; state.hasNewer = false;
    var loaded = state.at ? loadAt() : gql(CONVERSATION, { id: conversationId, branch: state.branch, last: PAGE_SIZE }).then(function (data) {
      return data.conversation;
    });
    loaded.then(function (c) {
      if (!c) throw GraphQLError('There is no such conversation.', 'NOT_FOUND');
      renderConversation(c);
    }).catch(function (err) { failed(err, loadConversation); });
  }

  // loadAt reads the page around the message whose cursor is state.at: the messages
  // before it (`before:`), then from the last of those on (`after:`), which starts with it.
  function loadAt() {
    return gql(AT_BEFORE, { id: conversationId, branch: state.branch, at: state.at }).then(function (data) {
      var c = data.conversation;
      if (!c) return null;
      var older = c.messages;
      return gql(NEWER, { id: conversationId, branch: state.branch, after: older.pageInfo.endCursor }).then(function (d) {
        var newer = d.conversation.messages;
        state.hitId = newer.edges.length ? newer.edges[0].node.id : null;
        c.messages = {
          totalCount: older.totalCount,
          edges: older.edges.concat(newer.edges),
          hasNewer: newer.pageInfo.hasNextPage,
          pageInfo: {
            hasPreviousPage: older.edges.length ? older.pageInfo.hasPreviousPage : false,
            startCursor: older.edges.length ? older.pageInfo.startCursor : newer.pageInfo.startCursor,
            endCursor: newer.pageInfo.endCursor || older.pageInfo.endCursor,
          },
        };
        return c;
      });
    });
  }

  // loadNewer reads the next page toward the newest message (a page opened at a hit);
  // the live subscription starts once the newest is shown.
  function loadNewer(feed, bottom) {
    if (!state.hasNewer || state.loadingNewer) return;
    state.loadingNewer = true;
    feed.setAttribute('aria-busy', 'true');
    gql(NEWER, { id: conversationId, branch: state.branch, after: state.endCursor }).then(function (d) {
      var conn = d.conversation.messages;
      renderInto(feed, conn.edges);
      if (conn.edges.length) state.lastId = conn.edges[conn.edges.length - 1].node.id;
      if (conn.pageInfo.endCursor) state.endCursor = conn.pageInfo.endCursor;
      state.hasNewer = conn.pageInfo.hasNextPage;
      bottom.hidden = !state.hasNewer;
      if (!state.hasNewer) goLive(feed);
    }, function (err) { showError(err.message); }).finally(function () {
      state.loadingNewer = false;
      feed.setAttribute('aria-busy', 'false');
    });
  }

  function branchList(c) {
    if (c.branches.length < 2) return null;
    var select = el('select', { id: 'branch-select' });
    c.branches.forEach(function (b, i) {
      var label = 'Branch ' + (i + 1) + ': ' + b.length + ' messages' + (b.forkPosition ? ', from #' + b.forkPosition : '') + (b.active ? ' (active)' : '');
      var viewed = state.branch ? state.byId[b.leaf.id] !== undefined || b.leaf.id === state.branch : b.active;
      select.appendChild(el('option', { value: b.leaf.id, selected: viewed, text: label }));
    });
    select.addEventListener('change', function () { viewBranch(select.value); });
    return el('div', { class: 'branches' }, [el('label', { for: 'branch-select', text: 'Branch' }), select]);
  }

  function renderConversation(c) {
    document.title = (c.title || 'Untitled') + ' · Parley';
    main.textContent = '';
    var conn = c.messages;
    var feed = el('div', { class: 'feed', id: 'feed', role: 'feed', 'aria-label': 'Messages', 'aria-busy': 'false' });
    var top = el('div', { class: 'older', id: 'older' });
    var olderButton = el('button', { type: 'button', text: 'Load older messages' });
    top.appendChild(olderButton);
    var exports = el('div', { class: 'exports', role: 'group', 'aria-label': 'Export' }, [el('span', { text: 'Export:' })].concat(
      [['MARKDOWN', 'Markdown'], ['OPENAI_CHAT', 'OpenAI Chat'], ['OPENAI_RESPONSES', 'OpenAI Responses'], ['ANTHROPIC_MESSAGES', 'Anthropic'], ['PARLEY_JSON', 'Parley JSON']]
        .map(function (f) { return el('button', { type: 'button', 'data-format': f[0], onclick: function () { exportAs(f[0]); }, text: f[1] }); })));
    var actions = el('div', { class: 'actions' });
    var viewingInactive = state.branch && !c.branches.some(function (b) { return b.active && conn.edges.some(function (e) { return e.node.id === b.leaf.id; }); });
    if (state.branch) {
      actions.appendChild(el('span', { class: 'marker', id: 'viewing', text: viewingInactive ? 'Viewing another branch than the active one.' : 'Viewing the active branch.' }));
      if (!readOnly) {
        actions.appendChild(el('button', { type: 'button', onclick: function () { viewBranch(null); }, text: 'Back to the active branch' }));
      }
      if (viewingInactive && !readOnly) {
        actions.appendChild(el('button', { type: 'button', id: 'make-active', onclick: function () {
          if (!confirm('Make this branch the conversation\u2019s active branch? New messages will continue it.')) return;
          gql(SWITCH, { c: conversationId, m: state.branch }).then(function () { viewBranch(null); }, function (err) { showError(err.message); });
        }, text: 'Make this the active branch' }));
      }
    }
    if (!readOnly) {
      actions.appendChild(el('button', { type: 'button', id: 'share', onclick: shareDialog, text: 'Share read-only link' }));
    }
    main.appendChild(el('div', { class: 'conv-head' }, [
      el('h1', { text: c.title || 'Untitled' }),
      el('p', { class: 'conv-meta' }, [conn.totalCount + ' messages on this branch · last activity ', timeEl(c.updatedAt), ' · ',
        el('span', { id: 'live-state', class: 'live-state', text: 'Connecting…' })]),
      branchList(c), actions, exports,
    ]));
    main.appendChild(top);
    main.appendChild(feed);
    var bottom = el('div', { class: 'newer', id: 'newer' }, [
      el('button', { type: 'button', text: 'Load newer messages', onclick: function () { loadNewer(feed, bottom); } })]);
    main.appendChild(bottom);
    main.appendChild(el('p', { class: 'keys', text: 'Keys: j / k next and previous message, Enter or Space opens and closes a section.' }));

    state.startCursor = conn.pageInfo.startCursor;
    state.hasOlder = conn.pageInfo.hasPreviousPage;
    top.hidden = !state.hasOlder;
    renderInto(feed, conn.edges);
    state.lastId = conn.edges.length ? conn.edges[conn.edges.length - 1].node.id : null;
    state.endCursor = conn.pageInfo.endCursor;
    state.hasNewer = !!conn.hasNewer;
    bottom.hidden = !state.hasNewer;
    if (state.hasNewer) {
      document.getElementById('live-state').textContent = 'Live once the newest messages are loaded';
      new IntersectionObserver(function (entries) {
        if (entries[0].isIntersecting) loadNewer(feed, bottom);
      }).observe(bottom);
    }
    var hit = state.hitId && state.byId[state.hitId];
    if (hit) {
      // Opened at a search hit: show it, marked, with the sections around it open.
      hit.classList.add('hit-target');
      hit.setAttribute('aria-current', 'true');
      for (var d = hit.parentElement; d && d !== feed; d = d.parentElement) {
        if (d.tagName === 'DETAILS') d.open = true;
      }
      hit.scrollIntoView({ block: 'center' });
      hit.focus({ preventScroll: true });
    } else {
      var lastArticle = feed.lastElementChild;
      if (lastArticle) lastArticle.scrollIntoView({ block: 'end' });
    }

    olderButton.addEventListener('click', function () { loadOlder(feed, top); });
    var io = new IntersectionObserver(function (entries) {
      if (entries[0].isIntersecting) loadOlder(feed, top);
    });
    io.observe(top);

    if (!state.hasNewer) goLive(feed);
  }

  // goLive follows the conversation once its newest message is shown: new messages that
  // continue the viewed branch, streaming replies growing, approvals changing in place.
  // Each stream resumes from its last cursor.
  function goLive(feed) {
    subs.push(subscribe(STREAM, { id: conversationId, after: state.endCursor }, 'after', function (d) {
      var ev = d.messageStream;
      if (ev.message) liveMessage(feed, ev.message);
      if (ev.delta) liveDelta(ev.delta);
      return ev.cursor;
    }));
    subs.push(subscribe(UPDATED, { id: conversationId }, null, function (d) {
      var m = d.messageUpdated.node;
      if (state.byId[m.id]) place(feed, m, messageArticle(m));
      return null;
    }));
  }

  function liveMessage(feed, m) {
    if (state.byId[m.id]) {
      place(feed, m, messageArticle(m)); // a streaming message ended, or changed
      return;
    }
    if (state.lastId === null ? m.parentId !== null : m.parentId !== state.lastId) return; // another branch
    place(feed, m, messageArticle(m));
    state.lastId = m.id;
    announce('New message: ' + m.label);
    var nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 300;
    if (nearBottom) state.byId[m.id].scrollIntoView({ block: 'end' });
  }

  // liveDelta grows a streaming message as its deltas arrive: the text as written, until
  // the message ends and arrives whole, rendered.
  function liveDelta(d) {
    var art = state.byId[d.messageId];
    if (!art) return;
    var body = art.querySelector('.msg-body');
    d.deltas.forEach(function (x) {
      var sel = '[data-stream="' + x.kind + '-' + x.index + '"]';
      var target = body.querySelector(sel);
      if (!target) {
        if (x.kind === 'TOOL_ARGUMENTS') {
          target = el('pre', { class: 'code streaming-args', 'data-stream': x.kind + '-' + x.index, 'aria-label': 'Arguments of ' + (x.toolName || 'a tool call') });
          body.appendChild(el('div', { class: 'tool-call' }, [el('span', { class: 'tool-name', text: x.toolName || '' }), target]));
        } else if (x.kind === 'THINKING') {
          target = el('div', { class: 'streaming-text', 'data-stream': x.kind + '-' + x.index });
          body.appendChild(el('details', { class: 'thinking' }, [el('summary', { text: 'Thinking' }), target]));
        } else if (x.kind === 'TEXT') {
          var part = body.querySelector('[data-part="' + x.index + '"]');
          target = el('div', { class: 'streaming-text', 'data-stream': x.kind + '-' + x.index });
          if (part) {
            target.textContent = part.textContent;
            part.replaceWith(target);
          } else {
            body.appendChild(target);
          }
        } else {
          return; // signatures are not shown
        }
      }
      target.textContent += x.text;
    });
  }

  function loadOlder(feed, top) {
    if (!state.hasOlder || state.loadingOlder) return;
    state.loadingOlder = true;
    feed.setAttribute('aria-busy', 'true');
    gql(OLDER, { id: conversationId, branch: state.branch, before: state.startCursor }).then(function (d) {
      var conn = d.conversation.messages;
      var height = document.documentElement.scrollHeight;
      renderInto(feed, conn.edges, feed.firstChild);
      // Keep what was on screen where it was.
      window.scrollBy(0, document.documentElement.scrollHeight - height);
      state.startCursor = conn.pageInfo.startCursor;
      state.hasOlder = conn.pageInfo.hasPreviousPage;
      top.hidden = !state.hasOlder;
    }, function (err) { showError(err.message); }).finally(function () {
      state.loadingOlder = false;
      feed.setAttribute('aria-busy', 'false');
    });
  }

  function shareDialog() {
    var box = document.getElementById('share-box');
    if (box) { box.remove(); return; }
    var hours = el('select', { id: 'share-expiry' }, [['3600', '1 hour'], ['86400', '1 day'], ['604800', '7 days'], ['2592000', '30 days']]
      .map(function (o, i) { return el('option', { value: o[0], selected: i === 1, text: o[1] }); }));
    var out = el('input', { id: 'share-url', readonly: true, 'aria-label': 'Share link', class: 'share-url' });
    var go = el('button', { type: 'button', id: 'share-create', text: 'Create link' });
    box = el('div', { id: 'share-box', class: 'share-box', role: 'group', 'aria-label': 'Share a read-only link' }, [
      el('label', { for: 'share-expiry', text: 'Expires in' }), hours, go, out,
      el('p', { class: 'marker', text: 'Whoever has the link can read this conversation' + (state.branch ? ' (this branch)' : '') + ' and nothing else, until it expires or you revoke it (parley token revoke, or revokeShareLink).' }),
    ]);
    go.addEventListener('click', function () {
      gql(SHARE, { c: conversationId, branch: state.branch, expiresIn: Number(hours.value) }).then(function (d) {
        var u = new URL('/viewer/c/' + encodeURIComponent(conversationId), location.href);
        if (state.branch) u.searchParams.set('branch', state.branch);
        u.hash = 'share=' + d.createShareLink.secret;
        out.value = u.href;
        out.select();
      }, function (err) { showError('Cannot share: ' + err.message); });
    });
    document.querySelector('.actions').after(box);
    hours.focus();
  }

  // Keyboard: j / k move between messages.
  document.addEventListener('keydown', function (ev) {
    if (ev.target.matches('input, select, textarea') || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key !== 'j' && ev.key !== 'k') return;
    var all = Array.prototype.slice.call(document.querySelectorAll('article.msg'));
    if (!all.length) return;
    var i = all.indexOf(document.activeElement.closest ? document.activeElement.closest('article.msg') : null);
    var next = ev.key === 'j' ? (i < 0 ? 0 : Math.min(i + 1, all.length - 1)) : (i < 0 ? all.length - 1 : Math.max(i - 1, 0));
    all[next].focus();
    ev.preventDefault();
  });

  showBanner();
  if (page === 'conversation') loadConversation();
  else if (readOnly) main.textContent = 'A share link opens one conversation only.';
  else startList();
})();
