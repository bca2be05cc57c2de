// playground.js starts GraphiQL for Parley. It is a file rather than an inline script
// because the page's Content-Security-Policy allows scripts from 'self' only. The page
// passes its settings in data- attributes of #graphiql.
(function () {
  'use strict';

  // GraphiQL's dialogs lock page scrolling by adding a <style> element (react-remove-scroll),
  // which they stamp with window.__webpack_nonce__. The page's CSP admits styles that carry
  // the per-request nonce, which the server also put on this script tag.
  var script = document.currentScript;
  if (script && script.nonce) {
    window.__webpack_nonce__ = script.nonce;
  }

  var root = document.getElementById('graphiql');
  var url = new URL(root.dataset.endpoint, window.location.href);
  // Subscriptions use graphql-transport-ws on the same path: ws: next to http:, wss: next to https:.
  var subscriptionUrl = new URL(url.href);
  subscriptionUrl.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';

  var fetcher = GraphiQL.createFetcher({
    url: url.href,
    subscriptionUrl: subscriptionUrl.href,
  });

  // The headers pane (where an Authorization: Bearer token goes when the server requires
  // one) is kept in this tab's sessionStorage, so that a reload keeps the token. Not in
  // localStorage, where GraphiQL's own shouldPersistHeaders would put it: there it would
  // outlive the tab and the browser session on disk and be shared by every tab of the
  // origin; a tab's sessionStorage ends with the tab, and each tab has its own.
  var HEADERS_KEY = 'parley:headers';
  var savedHeaders;
  try {
    savedHeaders = window.sessionStorage.getItem(HEADERS_KEY) || undefined;
  } catch (e) {
    // Storage disabled: the headers last as long as the page, as before.
  }
  function saveHeaders(value) {
    try {
      if (value && value.trim()) {
        window.sessionStorage.setItem(HEADERS_KEY, value);
      } else {
        window.sessionStorage.removeItem(HEADERS_KEY);
      }
    } catch (e) {
      // Storage disabled or full: nothing to keep them in.
    }
  }

  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: root.dataset.defaultQuery,
      headers: savedHeaders,
      onEditHeaders: saveHeaders,
    })
  );
})();
