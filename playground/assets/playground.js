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

  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: root.dataset.defaultQuery,
    })
  );
})();
