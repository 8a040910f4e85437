// Slow work shown as it goes (a legal hold being placed): an element with an id and
// data-refresh="<seconds>" is fetched again from this page's address every so often and
// replaced by its new version, until that no longer asks for it. Only that element changes,
// so whatever is being typed elsewhere on the page stays.
(function () {
  "use strict";
  function watch(element) {
    var seconds = Number(element.dataset.refresh) || 5;
    window.setTimeout(function () {
      window.fetch(window.location.href, { credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok) { throw new Error(String(response.status)); }
          return response.text();
        })
        .then(function (html) {
          var found = new DOMParser().parseFromString(html, "text/html").getElementById(element.id);
          if (!found) { return; }
          var fresh = document.importNode(found, true);
          // A stacked table's cell keeps the column name static/js/tables.js gave it.
          if (element.hasAttribute("data-label") && !fresh.hasAttribute("data-label")) {
            fresh.setAttribute("data-label", element.getAttribute("data-label"));
          }
          element.replaceWith(fresh);
          if (fresh.dataset.refresh) { watch(fresh); }
        })
        .catch(function () { watch(element); });
    }, seconds * 1000);
  }
  document.querySelectorAll("[data-refresh][id]").forEach(watch);
})();
