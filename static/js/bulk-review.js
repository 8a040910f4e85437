// Bulk review by keyboard (templates/projects/proposal_bulk.html): j / k move the current row,
// x selects it, a / r approve / reject the selected rows (the current one when none is
// selected) with the form's note. Keys typed in the note or the filter are text, not commands.
// Without this script the page works with the mouse: tick the boxes, press a button.
(function () {
  "use strict";
  var form = document.getElementById("bulk-form");
  if (!form) { return; }
  var rows = Array.prototype.slice.call(form.querySelectorAll("tr[data-row]"));
  var at = rows.length ? 0 : -1;

  function box(i) { return rows[i].querySelector("input[type=checkbox]"); }

  function show() {
    rows.forEach(function (row, i) {
      row.classList.toggle("current", i === at);
      if (i === at) { row.setAttribute("aria-current", "true"); } else { row.removeAttribute("aria-current"); }
    });
    if (at >= 0) { rows[at].scrollIntoView({block: "nearest"}); }
  }

  function decide(value) {
    var any = rows.some(function (row, i) { return box(i) && box(i).checked; });
    if (!any && at >= 0 && box(at)) { box(at).checked = true; }
    var button = form.querySelector("button[name=decision][value=" + value + "]");
    if (form.requestSubmit) { form.requestSubmit(button); } else { button.click(); }
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) { return; }
    var target = event.target;
    var tag = (target.tagName || "").toLowerCase();
    if ((tag === "input" && target.type !== "checkbox") || tag === "textarea" || tag === "select" ||
        target.isContentEditable) { return; }
    switch (event.key) {
      case "j": at = Math.min(at + 1, rows.length - 1); show(); break;
      case "k": at = Math.max(at - 1, 0); show(); break;
      case "x": if (at >= 0 && box(at)) { box(at).checked = !box(at).checked; } break;
      case "a": decide("approve"); break;
      case "r": decide("reject"); break;
      default: return;
    }
    event.preventDefault();
  });
  show();
})();
