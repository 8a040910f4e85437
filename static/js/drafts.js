// Drafts: what a person types into a form marked data-draft="NAME" is kept in this browser
// (localStorage, under the user's id and NAME) from the first keystroke until the server has
// taken it. A session that ended, an expired form or a failed save (storage down, a conflict)
// never loses it: when the form is shown again with other values, a banner offers the text
// back. The server names the drafts it has taken in <body data-drafts-saved>, and they are
// forgotten here (projects/drafts.py). Hidden fields are left as the page has them, except
// those the form names in data-draft-carry (the editor's base revision: restored with the
// text, a save then meets the newer revision as a conflict and merges, never overwrites it).
(function () {
  "use strict";
  var body = document.body;
  var user = body.dataset.user;
  if (!user || !window.localStorage) { return; }
  var PREFIX = "mgc-draft:" + user + ":";
  var MAX_AGE = 14 * 24 * 3600 * 1000;  // a draft nobody came back to in two weeks goes
  var words = document.getElementById("draft-words");
  var lang = document.documentElement.lang || undefined;

  function say(name, values) {
    var text = (words && words.dataset["text" + name.charAt(0).toUpperCase() + name.slice(1)]) || name;
    return text.replace(/\{(\w+)\}/g, function (all, key) {
      return values && key in values ? values[key] : all;
    });
  }

  function read(key) {
    try { return JSON.parse(localStorage.getItem(key)); } catch (e) { return null; }
  }

  function forget(key) {
    try { localStorage.removeItem(key); } catch (e) { /* private mode: nothing was kept */ }
  }

  // Drop what the server has taken, and drafts too old to matter.
  var saved = [];
  try { saved = JSON.parse(body.dataset.draftsSaved || "[]"); } catch (e) { saved = []; }
  saved.forEach(function (name) { forget(PREFIX + name); });
  for (var i = localStorage.length - 1; i >= 0; i--) {
    var name = localStorage.key(i);
    if (name && name.indexOf("mgc-draft:") === 0) {
      var old = read(name);
      if (!old || !old.at || Date.now() - old.at > MAX_AGE) { forget(name); }
    }
  }

  function carried(form) {
    return (form.dataset.draftCarry || "").split(/\s+/).filter(Boolean);
  }

  // The fields a person types into or picks, by name (radio groups and checkboxes by value).
  function fields(form) {
    var carry = carried(form);
    return Array.prototype.filter.call(form.elements, function (field) {
      if (!field.name || field.name === "csrfmiddlewaretoken" || field.disabled) { return false; }
      if (field.type === "hidden") { return carry.indexOf(field.name) >= 0; }
      return ["submit", "button", "reset", "file", "password"].indexOf(field.type) < 0;
    });
  }

  function valueOf(field) {
    if (field.type === "checkbox" || field.type === "radio") { return field.checked; }
    return field.value;
  }

  function fieldKey(field) {
    return field.type === "checkbox" || field.type === "radio"
      ? field.name + "=" + field.value : field.name;
  }

  function snapshot(form) {
    var values = {};
    fields(form).forEach(function (field) { values[fieldKey(field)] = valueOf(field); });
    return values;
  }

  // Typed differently from the page's own values (hidden fields carried do not count alone).
  function differs(form, values, from) {
    return fields(form).some(function (field) {
      var key = fieldKey(field);
      return field.type !== "hidden" && key in values && values[key] !== from[key];
    });
  }

  function restore(form, values) {
    fields(form).forEach(function (field) {
      var key = fieldKey(field);
      if (!(key in values)) { return; }
      if (field.type === "checkbox" || field.type === "radio") {
        field.checked = values[key];
      } else {
        field.value = values[key];
      }
      field.dispatchEvent(new Event("input", { bubbles: true }));
      field.dispatchEvent(new Event("change", { bubbles: true }));
    });
  }

  function offer(form, key, draft, initial) {
    var box = document.createElement("div");
    box.className = "notice warning draft-offer";
    box.setAttribute("role", "alert");
    var text = document.createElement("p");
    var when = new Date(draft.at).toLocaleString(lang, { dateStyle: "short", timeStyle: "short" });
    text.textContent = say("offer", { when: when });
    var moved = carried(form).some(function (name) {
      var field = form.elements[name];
      return field && name in draft.values && draft.values[name] !== field.value;
    });
    if (moved) { text.textContent += " " + say("moved"); }
    box.appendChild(text);
    var put = document.createElement("button");
    put.type = "button";
    put.className = "small-button draft-restore";
    put.textContent = say("restore");
    var drop = document.createElement("button");
    drop.type = "button";
    drop.className = "small-button secondary draft-discard";
    drop.textContent = say("discard");
    box.appendChild(put);
    box.appendChild(drop);
    put.addEventListener("click", function () {
      restore(form, draft.values);
      text.textContent = say("restored");
      box.className = "notice info draft-offer";
      box.setAttribute("role", "status");
      put.remove();
      drop.remove();
      var first = fields(form).filter(function (f) { return f.type !== "hidden"; })[0];
      if (first) { first.focus(); }
    });
    drop.addEventListener("click", function () {
      forget(key);
      box.remove();
      // What stays on the page is the starting point again.
      Object.keys(initial).forEach(function (name) { delete initial[name]; });
      Object.assign(initial, snapshot(form));
    });
    form.parentNode.insertBefore(box, form);
  }

  document.querySelectorAll("form[data-draft]").forEach(function (form) {
    var key = PREFIX + form.dataset.draft;
    var initial = snapshot(form);
    var draft = read(key);
    // A draft equal to what the page shows stays too (a refused save the server sent back):
    // it goes when the server has taken the text, not before.
    // data-draft-offer="no": the page already holds the text another way (a conflict's
    // merge shows it merged and keeps it as typed); the draft is kept, not offered.
    if (draft && draft.values && form.dataset.draftOffer !== "no" &&
        differs(form, draft.values, initial)) {
      offer(form, key, draft, initial);
    }
    var timer = null;
    function keep() {
      clearTimeout(timer);
      var values = snapshot(form);
      // Nothing typed yet: no draft. Once there is one it follows the form, back to the
      // page's own text too (then it is not offered again).
      if (!differs(form, values, initial) && read(key) === null) { return; }
      try {
        localStorage.setItem(key, JSON.stringify({ at: Date.now(), values: values }));
      } catch (e) { /* full or refused: the form still works, it is just not kept */ }
    }
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(keep, 250);
    });
    form.addEventListener("change", keep);
    form.addEventListener("submit", keep);  // before the request leaves: it may not come back
  });
})();
