// Tables whose rows have actions (class "stack": Release a hold, Remove a member, Redeliver an
// event...) stack on narrow windows, each cell on a line of its own (console.css), so no
// action is off to the side of a table that scrolls. Each cell is given its column's name to
// show above it there (data-label); a column whose heading is only for screen readers (the
// actions) shows none. Without this script the cells stack all the same, unnamed.
(function () {
  "use strict";
  document.querySelectorAll("table.stack").forEach(function (table) {
    var names = [];
    table.querySelectorAll("thead tr:last-child th").forEach(function (th) {
      var seen = th.cloneNode(true);
      seen.querySelectorAll(".visually-hidden").forEach(function (hidden) { hidden.remove(); });
      var name = seen.textContent.replace(/\s+/g, " ").trim();
      for (var span = th.colSpan || 1; span > 0; span--) { names.push(name); }
    });
    table.querySelectorAll("tbody tr").forEach(function (row) {
      var column = 0;
      Array.prototype.forEach.call(row.cells, function (cell) {
        if (names[column] && !cell.hasAttribute("data-label")) { cell.setAttribute("data-label", names[column]); }
        column += cell.colSpan || 1;
      });
    });
  });
})();
