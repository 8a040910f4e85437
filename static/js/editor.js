// The editor: live preview (debounced, rendered by the server's sanitizing pipeline),
// size counter, Ctrl+S to save, a warning before leaving with unsaved changes.
(function () {
  "use strict";
  var form = document.getElementById("editor-form");
  if (!form) { return; }
  var text = form.querySelector("textarea[name=content]");
  var preview = document.getElementById("preview");
  var size = document.getElementById("size");
  var status = document.getElementById("preview-status");
  var warnings = document.getElementById("scan-warnings");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var maxBytes = parseInt(form.dataset.maxBytes, 10);
  var dirty = form.dataset.dirty === "true";
  var timer = null;
  var sequence = 0;
  var lang = document.documentElement.lang || undefined;

  // The page's words, translated by the server: data-text-* attributes of the form, with
  // {name} placeholders filled in here.
  function say(name, values) {
    var text = form.dataset["text" + name.charAt(0).toUpperCase() + name.slice(1)] || name;
    return text.replace(/\{(\w+)\}/g, function (all, key) {
      return values && key in values ? values[key] : all;
    });
  }

  function byteLength(value) {
    return new TextEncoder().encode(value.replace(/\r\n/g, "\n")).length;
  }

  // Sizes in one unit, KB (1,024 bytes) as the server's pages show them.
  function kb(bytes) {
    return say("kb", { n: (bytes / 1024).toLocaleString(lang, { maximumFractionDigits: 1 }) });
  }

  var saveButton = document.getElementById("save-button");
  var tooBig = document.getElementById("too-big");

  function updateSize() {
    var n = byteLength(text.value);
    var over = n > maxBytes;
    var values = { size: kb(n), limit: kb(maxBytes) };
    size.textContent = say("size", values);
    size.classList.toggle("over", over);
    saveButton.disabled = over;
    tooBig.hidden = !over;
    tooBig.textContent = over ? say("tooBig", values) : "";
    return over;
  }

  function refresh() {
    var mine = ++sequence;
    if (updateSize()) {  // over the limit: the server would refuse it; say why, ask nothing
      status.textContent = tooBig.textContent;
      return;
    }
    status.textContent = say("updating");
    fetch(form.dataset.previewUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ content: text.value })
    }).then(function (response) {
      if (response.redirected) {  // to the login page: the session has ended
        return { ok: false, data: { error: say("ended") } };
      }
      return response.json().then(function (data) { return { ok: response.ok, data: data }; });
    }).then(function (result) {
      if (mine !== sequence) { return; }  // a newer keystroke has asked already
      if (result.ok) {
        preview.innerHTML = result.data.html;  // sanitized by the server (nh3)
        status.textContent = say("current");
        showWarnings(result.data.warnings || []);
      } else {
        status.textContent = result.data.error || say("failed");
      }
    }).catch(function () {
      if (mine === sequence) { status.textContent = say("offline"); }
    });
  }

  // What the scanner sees while the person types: text only, built with textContent.
  function showWarnings(items) {
    var list = warnings.querySelector("ul");
    list.textContent = "";
    items.forEach(function (item) {
      var li = document.createElement("li");
      li.textContent = say("line", { line: item.line, label: item.label, excerpt: item.excerpt });
      list.appendChild(li);
    });
    warnings.hidden = items.length === 0;
  }

  text.addEventListener("input", function () {
    dirty = true;
    // Out of date from the first keystroke, not only once the pause has passed.
    if (!updateSize() && status.textContent !== say("updating")) {
      status.textContent = say("updating");
    }
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  });

  form.addEventListener("submit", function (event) {
    if (updateSize()) {  // Ctrl+S on a text over the limit
      event.preventDefault();
      tooBig.focus();
      return;
    }
    dirty = false;
    saveButton.disabled = true;
    saveButton.textContent = say("saving");
  });

  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  window.addEventListener("beforeunload", function (event) {
    if (dirty) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  updateSize();
  refresh();
})();
