// custody operator console: approval inbox and ledger browser. Plain
// script, no build step. The session id lives in an HttpOnly cookie set by
// /login, so this script never sees it.
"use strict";

const PAGE = 25;
const state = {
  clockSkew: 0,          // server time minus local time, in ms
  approvals: new Map(),  // id -> approval shown as pending
  ledger: { after: null, stack: [], trace: "", kind: "" },
  timers: [],
  events: null,          // the EventSource of live approval changes
  fields: 0,             // edit fields made, for their unique ids
  inboxLoads: 0,         // inbox loads begun: only the latest may render
  role: "",              // the signed-in principal's role
};

const $ = (sel, root = document) => root.querySelector(sel);

// api fetches a JSON endpoint. A 401 goes to the sign-in page; any other
// failure throws an Error carrying the server's message and violations.
async function api(path, options = {}) {
  const res = await fetch(path, {
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    ...options,
  });
  const body = await res.json().catch(() => ({}));
  if (res.status === 401) {
    showLogin();
    throw new Error("sign in required");
  }
  if (!res.ok) {
    const e = body.error || {};
    const err = new Error(e.message || `request failed (${res.status})`);
    err.kind = e.kind;
    err.violations = Array.isArray(e.violations) ? e.violations : [];
    throw err;
  }
  return body;
}

function showError(msg) {
  const el = $("#error");
  el.textContent = msg;
  el.hidden = !msg;
}

function showLogin() {
  state.timers.forEach(clearInterval);
  state.timers = [];
  if (state.events) state.events.close();
  state.events = null;
  location.replace("/login");
}

// el builds an element with text and attributes.
function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function humanize(key) {
  const s = String(key).replace(/[_-]+/g, " ").trim();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// renderValue turns any JSON value into readable HTML: objects become
// definition lists, arrays lists, scalars text.
function renderValue(v, depth = 0) {
  if (v === null || v === undefined) return el("span", "—", { class: "muted" });
  if (Array.isArray(v)) {
    if (v.length === 0) return el("span", "none", { class: "muted" });
    if (depth > 4) return el("code", JSON.stringify(v));
    const ol = el("ul", null, { class: "list" });
    v.forEach((item) => ol.appendChild(el("li")).appendChild(renderValue(item, depth + 1)));
    return ol;
  }
  if (typeof v === "object") {
    if (depth > 4) return el("code", JSON.stringify(v));
    const dl = el("dl", null, { class: "kv" });
    for (const [k, val] of Object.entries(v)) {
      dl.appendChild(el("dt", humanize(k)));
      dl.appendChild(el("dd")).appendChild(renderValue(val, depth + 1));
    }
    return dl;
  }
  if (typeof v === "boolean") return el("span", v ? "yes" : "no");
  if (typeof v === "string" && v.includes("\n")) return renderLines(v);
  return el("span", String(v), { class: "value" });
}

// renderLines shows a multi-line text as it is; a line-by-line diff ("- "
// removed, "+ " added) is coloured.
function renderLines(text) {
  const pre = el("pre", null, { class: "lines", tabindex: "0" });
  for (const line of text.replace(/\n$/, "").split("\n")) {
    const cls = line.startsWith("+ ") ? "add" : line.startsWith("- ") ? "del" : "same";
    pre.appendChild(el("span", line + "\n", { class: cls }));
  }
  return pre;
}

// ---- navigation ----

function route() {
  const path = (location.hash.replace(/^#\/?/, "") || "inbox").split("?")[0];
  const [view, id] = path.startsWith("approvals/") ? ["approval", decodeURIComponent(path.slice(10))] : [path, ""];
  document.querySelectorAll("[data-view]").forEach((v) => (v.hidden = v.dataset.view !== view));
  document.querySelectorAll("nav a[href^='#']").forEach((a) => {
    if (a.getAttribute("href") === "#/" + view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  if (view === "ledger") {
    loadLedger();
    verify();
  } else if (view === "approval") loadApproval(id);
  else if (view === "grants") loadGrants();
  else loadInbox();
}

async function start() {
  let me;
  try {
    me = await api("/v1/console");
  } catch (err) {
    if (err.message !== "sign in required") showError(err.message);
    return;
  }
  $("#logout").hidden = false;
  state.role = me.principal.role;
  const who = me.principal.name ? `${me.principal.name} (${me.principal.id})` : me.principal.id;
  $("#principal").textContent = `${who} · ${me.principal.role}`;
  const links = $("#app-links");
  links.replaceChildren();
  for (const app of me.apps) links.appendChild(appLink(app));
  window.addEventListener("hashchange", route);
  route();
  state.timers.push(setInterval(loadInbox, 5000));
  // Where the store is shared, a decision taken on another instance shows
  // at once; elsewhere the stream is not found and the poll above serves.
  if (window.EventSource) {
    state.events = new EventSource("/v1/events");
    state.events.addEventListener("approval", () => loadInbox());
  }
  state.timers.push(setInterval(tickCountdowns, 1000));
  state.timers.push(setInterval(verify, 15000));
  verify();
  state.timers.push(setInterval(upstreamHealth, 15000));
  upstreamHealth();
}

// upstreamHealth says which upstream servers are down and why, as
// /healthz does: their tools answer unavailable meanwhile.
async function upstreamHealth() {
  const out = $("#upstreams-down");
  let down = [];
  try {
    const res = await fetch("/healthz", { credentials: "same-origin" });
    down = (await res.json()).upstreams_down || [];
  } catch (err) {
    return; // the API's own errors show elsewhere
  }
  out.hidden = down.length === 0;
  out.replaceChildren();
  down.forEach((u, i) => {
    if (i > 0) out.append(" · ");
    out.append(`Upstream ${u.name} is down${u.waiting ? " since the start" : ""}: ${u.error}`);
    // An upstream that takes a person's authorization waits for an
    // operator to connect it; an auditor only reads why it is down.
    if (u.connect && state.role === "operator") {
      out.append(" ");
      out.append(el("button", `Connect ${u.name}`, { type: "button", class: "primary", "data-testid": `connect-${u.name}` }));
      out.lastChild.addEventListener("click", () => connectUpstream(u.name));
    }
  });
}

// connectUpstream sends the browser to the authorization server of an
// upstream, which sends it back to custody with a code.
async function connectUpstream(name) {
  try {
    const res = await api(`/v1/upstreams/${encodeURIComponent(name)}/connect`, { method: "POST", body: "{}" });
    location.assign(res.authorization_url);
  } catch (err) {
    showError(`Connect ${name}: ${err.message}`);
  }
}

// appLink links an app in the navigation. On a phone only the title's
// first word shows, so that the navigation fits one row; the link's name
// stays the whole title.
function appLink(app) {
  const title = app.title || app.name;
  const cut = title.indexOf(" ");
  const a = el("a", cut < 0 ? title : title.slice(0, cut), { href: app.path, "data-testid": "nav-app-" + app.name });
  if (cut >= 0) a.appendChild(el("span", title.slice(cut), { class: "nav-rest" }));
  return a;
}

// ---- inbox ----

function serverNow() {
  return Date.now() + state.clockSkew;
}

function timeLeft(expiresAt) {
  const ms = Date.parse(expiresAt) - serverNow();
  if (ms <= 0) return { text: "expired", ms };
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  const text = (h ? `${h}h ${String(m).padStart(2, "0")}m` : `${m}:${String(sec).padStart(2, "0")}`) + " left";
  return { text, ms };
}

function tickCountdowns() {
  document.querySelectorAll("[data-testid=approval]").forEach((card) => {
    const left = timeLeft(card.dataset.expiresAt);
    const c = $("[data-testid=countdown]", card);
    c.textContent = left.text;
    c.classList.toggle("urgent", left.ms < 60000);
    $("[data-testid=approve]", card).disabled = left.ms <= 0;
  });
}

// loadInbox fetches the approvals and shows them. Loads overlap (the
// poll, the event stream, a decision's own refresh); only the latest one
// begun renders, so that a list fetched before a decision never puts its
// decided card back.
async function loadInbox() {
  if ($("#inbox").hidden && document.visibilityState !== "visible") return;
  const load = ++state.inboxLoads;
  const latest = () => load === state.inboxLoads;
  let pending, all;
  try {
    pending = await api("/v1/approvals?status=pending");
    all = await api("/v1/approvals");
  } catch (err) {
    if (err.message !== "sign in required" && latest()) showError(err.message);
    return;
  }
  if (!latest()) return;
  showError("");
  state.clockSkew = Date.parse(pending.server_time) - Date.now();
  if (!(await renderPending(pending.approvals, latest))) return;
  renderDecided(all.approvals.filter((a) => a.status !== "pending").slice(0, 10));
}

// renderPending shows list as the pending cards while latest holds, and
// reports whether it did.
async function renderPending(list, latest) {
  const ul = $("#pending-list");
  const ids = new Set(list.map((a) => a.approval_request_id));
  // Keep cards already shown, so an operator's edits survive a refresh.
  for (const card of [...ul.children]) if (!ids.has(card.dataset.id)) card.remove();
  for (const a of list) {
    const sel = `[data-id="${CSS.escape(a.approval_request_id)}"]`;
    if (ul.querySelector(sel)) continue;
    const card = await approvalCard(a);
    if (!latest()) return false;
    if (!ul.querySelector(sel)) ul.appendChild(card);
  }
  $("#inbox-empty").hidden = list.length > 0;
  const count = $("[data-testid=pending-count]");
  count.textContent = String(list.length);
  count.hidden = list.length === 0;
  tickCountdowns();
  return true;
}

// approvalCard builds the card of a pending approval, with its edit form.
async function approvalCard(a) {
  const card = $("#approval-card").content.firstElementChild.cloneNode(true);
  card.dataset.id = a.approval_request_id;
  card.dataset.expiresAt = a.expires_at;
  $("[data-testid=approval-tool]", card).textContent = humanize(a.tool);
  $("[data-testid=reason]", card).textContent = a.reason || "This tool needs a human confirmation for every call.";
  const ctx = $("[data-testid=context]", card);
  if (a.context) ctx.appendChild(renderValue(a.context));
  else ctx.closest("details").remove();
  const form = await decisionForm(a);
  $("[data-testid=arguments]", card).appendChild(renderArguments(a, form.fields));
  offerGrant(card, a, form.grant);
  $(".meta", card).textContent = `Tool ${a.tool} · trace ${a.trace_id || "—"} · asked by ${a.requester || "—"} · request ${a.approval_request_id}`;
  $("form", card).addEventListener("submit", (ev) => {
    ev.preventDefault();
    decide(card, a, ev.submitter ? ev.submitter.value : "approved");
  });
  if (state.role === "auditor") {
    // An auditor reads; only an operator decides (the server refuses the rest).
    $("form", card).hidden = true;
    const note = document.createElement("p");
    note.className = "muted";
    note.dataset.testid = "auditor-note";
    note.textContent = "You are signed in as an auditor: an operator decides.";
    $("form", card).after(note);
  }
  return card;
}

// decisionForm returns the approval's editable fields by name, each with
// the values its tool allows when those are a fixed set, and the grant
// the server prefills from the call (null without one).
async function decisionForm(a) {
  const fields = new Map();
  try {
    const form = await api(`/v1/approvals/${encodeURIComponent(a.approval_request_id)}/form`);
    for (const f of form.fields) fields.set(f.name, f);
    return { fields, grant: form.grant || null };
  } catch (err) {
    // Without the form, editable strings are offered as free text (the
    // server still checks the edited action in full), and no grant.
    return { fields, grant: null };
  }
}

// offerGrant sets up the card's "Grant…": the schema the server
// prefilled, shown exactly as it would be granted and editable, with a
// count of calls and a deadline; or why the tool takes no grants.
function offerGrant(card, a, grant) {
  const open = $("[data-testid=grant-open]", card);
  const panel = $("[data-testid=grant-panel]", card);
  if (!grant) return;
  if (!grant.allowed) {
    const why = $("[data-testid=grant-unavailable]", card);
    why.textContent = `No grant: ${grant.reason || "this tool takes none"}`;
    why.hidden = false;
    return;
  }
  const id = `grant-${++state.fields}`;
  panel.id = id;
  open.setAttribute("aria-controls", id);
  $("[data-testid=grant-scope]", card).textContent = `Calls of ${a.tool} by ${a.requester || "the same agent"} whose arguments match this schema run without asking.`;
  $("[data-testid=grant-arguments]", card).value = JSON.stringify(grant.arguments, null, 2);
  open.hidden = false;
  open.addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    open.setAttribute("aria-expanded", String(!panel.hidden));
  });
}

// grantTerms reads the card's grant: its schema, calls and deadline.
function grantTerms(form) {
  let schema;
  try {
    schema = JSON.parse(form.elements.grant_arguments.value);
  } catch (err) {
    throw new Error(`the grant's schema is not JSON: ${err.message}`);
  }
  const terms = { arguments: schema };
  const uses = Number(form.elements.grant_max_uses.value || 0);
  if (uses > 0) terms.max_uses = uses;
  const until = form.elements.grant_expires.value;
  if (until) terms.expires = (until.length === 16 ? until + ":00" : until) + "Z";
  return terms;
}

// renderArguments shows the action's arguments; the ones an operator may
// edit are pre-filled inputs: a choice when the tool fixes the values,
// free text otherwise.
function renderArguments(a, fields = new Map()) {
  const editable = new Set(a.editable || []);
  const args = a.arguments && typeof a.arguments === "object" && !Array.isArray(a.arguments) ? a.arguments : null;
  if (!args) return renderValue(a.arguments);
  const dl = el("dl", null, { class: "kv" });
  for (const [k, v] of Object.entries(args)) {
    const id = `arg-${++state.fields}-${k}`;
    const f = fields.get(k);
    const choice = f && Array.isArray(f.enum) && f.enum.length > 0;
    if (!editable.has(k) || (typeof v !== "string" && !choice)) {
      dl.appendChild(el("dt", humanize(k)));
      dl.appendChild(el("dd")).appendChild(renderValue(v, 1));
      continue;
    }
    dl.appendChild(el("dt")).appendChild(el("label", humanize(k), { for: id }));
    const dd = dl.appendChild(el("dd", null, { "data-field": k }));
    dd.appendChild(choice ? enumSelect(id, k, v, f.enum) : textInput(id, k, v));
    dd.appendChild(el("small", choice ? "You may choose another value before approving." : "You may edit this before approving.", { class: "muted", id: id + "-hint" }));
  }
  return dl;
}

function textInput(id, k, v) {
  const input = el("textarea", null, { id, name: "arg:" + k, rows: String(Math.min(6, 1 + Math.ceil(v.length / 40))), "data-testid": "edit-" + k, "aria-describedby": id + "-hint" });
  input.value = v;
  return input;
}

// enumSelect offers the allowed values of an argument; each option's value
// is the JSON of the allowed value, so a number stays a number.
function enumSelect(id, k, v, values) {
  const select = el("select", null, { id, name: "arg:" + k, "data-testid": "edit-" + k, "data-json": "true", "aria-describedby": id + "-hint" });
  const current = JSON.stringify(v);
  for (const value of values) {
    const o = el("option", String(value), { value: JSON.stringify(value) });
    if (JSON.stringify(value) === current) o.selected = true;
    select.appendChild(o);
  }
  return select;
}

async function decide(card, a, decision) {
  const form = $("form", card);
  const body = { decision: decision === "grant" ? "approved" : decision, note: form.elements.note.value.trim() };
  if (body.decision === "approved") {
    const edited = editedArguments(form, a);
    if (edited) body.arguments = edited;
  }
  if (decision === "grant") {
    try {
      body.grant = grantTerms(form);
    } catch (err) {
      showError(`Could not record the decision: ${err.message}`);
      return;
    }
  }
  form.querySelectorAll("button").forEach((b) => (b.disabled = true));
  showViolations(card, []);
  try {
    const done = await api(`/v1/approvals/${encodeURIComponent(a.approval_request_id)}/decision`, { method: "POST", body: JSON.stringify(body) });
    showError("");
    if (card.closest("#approval-view")) renderApprovalDetail(done);
    else {
      card.remove();
      loadInbox();
    }
  } catch (err) {
    showViolations(card, err.violations || []);
    showError(`Could not record the decision: ${err.message}`);
    form.querySelectorAll("button").forEach((b) => (b.disabled = false));
  }
}

// pointerField returns the top-level member a JSON pointer ("/sign_text")
// names, or "" for the root.
function pointerField(instance) {
  const first = String(instance || "").split("/")[1];
  return first === undefined ? "" : first.replace(/~1/g, "/").replace(/~0/g, "~");
}

// showViolations puts each violation of a refused edit beside the field
// it names; the ones naming no field go in the card's own list.
function showViolations(card, violations) {
  card.querySelectorAll(".field-error").forEach((p) => p.remove());
  card.querySelectorAll("[aria-invalid]").forEach((i) => {
    i.removeAttribute("aria-invalid");
    i.setAttribute("aria-describedby", i.id + "-hint");
  });
  const other = $("[data-testid=violations]", card);
  other.replaceChildren();
  other.hidden = true;
  violations.forEach((v, i) => {
    const name = pointerField(v.instance);
    const dd = name ? card.querySelector(`[data-field="${CSS.escape(name)}"]`) : null;
    const input = dd && dd.querySelector("textarea, select");
    const msg = `${v.instance || "the action"}: ${v.message}`;
    if (!input) {
      other.appendChild(el("li", msg));
      other.hidden = false;
      return;
    }
    const p = el("p", v.message, { class: "field-error", id: `${input.id}-error-${i}`, "data-testid": "violation-" + name });
    dd.insertBefore(p, input.nextSibling);
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", `${input.getAttribute("aria-describedby")} ${p.id}`);
  });
}

// editedArguments returns the arguments with the operator's edits, or null
// when nothing changed (so the exact requested action is approved).
function editedArguments(form, a) {
  let changed = false;
  const args = { ...a.arguments };
  for (const input of form.closest(".card").querySelectorAll("[name^='arg:']")) {
    const k = input.name.slice(4);
    const value = input.dataset.json ? JSON.parse(input.value) : input.value;
    if (JSON.stringify(value) !== JSON.stringify(args[k])) {
      args[k] = value;
      changed = true;
    }
  }
  return changed ? args : null;
}

// ---- one approval ----

// loadApproval shows one approval (the link a notification carries): its
// card while it is pending, what became of it otherwise.
async function loadApproval(id) {
  let a;
  try {
    a = await api(`/v1/approvals/${encodeURIComponent(id)}`);
  } catch (err) {
    if (err.message !== "sign in required") showError(err.message);
    return;
  }
  showError("");
  await renderApprovalDetail(a);
}

async function renderApprovalDetail(a) {
  const box = $("#approval-view-body");
  $("#approval-title").textContent = `Approval: ${humanize(a.tool)}`;
  if (a.status === "pending") {
    const card = await approvalCard(a);
    card.dataset.expiresAt = a.expires_at;
    const ul = el("ul", null, { class: "cards" });
    ul.appendChild(card);
    box.replaceChildren(ul);
    tickCountdowns();
    return;
  }
  const dl = el("dl", null, { class: "kv", "data-testid": "approval-outcome" });
  const rows = [["Status", a.status], ["Decided by", a.operator_id || "—"], ["Note", a.note || "—"], ["Trace", a.trace_id || "—"], ["Request", a.approval_request_id]];
  for (const [k, v] of rows) {
    dl.appendChild(el("dt", k));
    dl.appendChild(el("dd", v));
  }
  dl.appendChild(el("dt", "Action"));
  dl.appendChild(el("dd")).appendChild(renderValue(a.arguments, 1));
  box.replaceChildren(dl);
}

function renderDecided(list) {
  const ul = $("#decided-list");
  ul.replaceChildren();
  if (list.length === 0) ul.appendChild(el("li", "No decisions yet.", { class: "muted" }));
  for (const a of list) {
    const li = el("li", null, { "data-testid": "decided", "data-id": a.approval_request_id });
    li.appendChild(el("span", a.status, { class: "badge " + a.status, "data-testid": "decided-status" }));
    li.appendChild(el("a", humanize(a.tool), { href: "#/approvals/" + encodeURIComponent(a.approval_request_id) }));
    const who = a.operator_id ? ` by ${a.operator_id}` : "";
    li.appendChild(el("span", `${who}${a.note ? ` — “${a.note}”` : ""}`, { class: "muted" }));
    ul.appendChild(li);
  }
}

// ---- grants ----

// loadGrants shows every grant, newest first, with a Revoke for those
// that still stand.
async function loadGrants() {
  let list;
  try {
    list = await api("/v1/grants");
  } catch (err) {
    if (err.message !== "sign in required") showError(err.message);
    return;
  }
  showError("");
  const ul = $("#grants-list");
  ul.replaceChildren();
  for (const g of list.grants) ul.appendChild(grantCard(g));
  $("#grants-empty").hidden = list.grants.length > 0;
}

function grantCard(g) {
  const li = el("li", null, { class: "card", "data-testid": "grant", "data-id": g.grant_id });
  const head = li.appendChild(el("div", null, { class: "card-head" }));
  head.appendChild(el("h2", humanize(g.tool)));
  head.appendChild(el("span", g.status.replace("_", " "), { class: "badge " + g.status, "data-testid": "grant-status" }));
  const dl = li.appendChild(el("dl", null, { class: "kv" }));
  const rows = [["Agent", g.agent], ["Calls", g.max_uses ? `${g.uses} of ${g.max_uses}` : String(g.uses)],
    ["Until", g.expires_at || "—"], ["Granted by", g.operator_id], ["Note", g.note || "—"], ["Grant", g.grant_id]];
  if (g.revoked_by) rows.push(["Revoked by", `${g.revoked_by}: ${g.revoke_reason || ""}`]);
  for (const [k, v] of rows) {
    dl.appendChild(el("dt", k));
    dl.appendChild(el("dd", v));
  }
  li.appendChild(el("h3", "Arguments allowed"));
  li.appendChild(el("pre", JSON.stringify(g.arguments, null, 2), { "data-testid": "grant-schema", tabindex: "0" }));
  if (g.status === "revoked") return li;
  const form = li.appendChild(el("form", null, { class: "stack" }));
  const id = `revoke-${++state.fields}`;
  form.appendChild(el("label", "Reason", { for: id }));
  form.appendChild(el("input", null, { id, name: "reason", required: "", "data-testid": "revoke-reason", autocomplete: "off" }));
  form.appendChild(el("button", "Revoke", { type: "submit", class: "danger", "data-testid": "revoke" }));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const reason = form.elements.reason.value.trim();
    if (!reason) return;
    try {
      await api(`/v1/grants/${encodeURIComponent(g.grant_id)}/revoke`, { method: "POST", body: JSON.stringify({ reason }) });
      loadGrants();
    } catch (err) {
      showError(`Could not revoke the grant: ${err.message}`);
    }
  });
  return li;
}

// ---- ledger ----

async function loadLedger() {
  const l = state.ledger;
  try {
    if (l.after === null) l.after = await latestAfter();
    const q = new URLSearchParams({ after: String(l.after), limit: String(PAGE) });
    if (l.trace) q.set("trace", l.trace);
    if (l.kind) q.set("kind", l.kind);
    const page = await api("/v1/ledger?" + q);
    renderLedger(page);
    showError("");
  } catch (err) {
    if (err.message !== "sign in required") showError(err.message);
  }
}

// latestAfter is the cursor of the newest page: unfiltered seqs are dense,
// filtered ones are not, so a filtered view starts at the beginning.
async function latestAfter() {
  const l = state.ledger;
  if (l.trace || l.kind) return 0;
  const head = await api("/v1/ledger?limit=1");
  return Math.max(0, head.head.seq - PAGE);
}

function renderLedger(page) {
  const l = state.ledger;
  const tbody = $("#ledger-rows");
  tbody.replaceChildren();
  for (const e of page.entries) tbody.appendChild(ledgerRow(e));
  if (page.entries.length === 0) tbody.appendChild(el("tr")).appendChild(el("td", "No entries.", { colspan: "6", class: "muted" }));
  const first = page.entries[0], last = page.entries[page.entries.length - 1];
  $("#page-info").textContent = first ? `seq ${first.seq}–${last.seq} of ${page.head.seq}` : `${page.head.seq} entries`;
  $("#page-prev").disabled = l.after === 0;
  $("#page-next").disabled = !page.next_after;
  l.next = page.next_after || 0;
}

function ledgerRow(e) {
  const tr = el("tr", null, { "data-testid": "ledger-row", "data-kind": e.kind, "data-seq": String(e.seq) });
  const seq = el("td");
  seq.appendChild(el("button", String(e.seq), { type: "button", class: "link", "aria-label": `Show entry ${e.seq}` }));
  tr.appendChild(seq);
  tr.appendChild(el("td", e.at.replace("T", " ").replace(/\.\d+Z$/, "")));
  tr.appendChild(el("td")).appendChild(el("span", e.kind, { class: "kind " + e.kind.split(".")[1] }));
  tr.appendChild(el("td", short(e.trace), { title: e.trace }));
  tr.appendChild(el("td", e.actor));
  tr.appendChild(el("td", Object.entries(e.refs || {}).map(([k, v]) => `${k}=${short(v)}`).join(" ")));
  tr.addEventListener("click", () => showEntry(e));
  return tr;
}

function short(s) {
  return s && s.length > 14 ? s.slice(0, 8) + "…" : s || "";
}

function showEntry(e) {
  const d = $("#entry-detail");
  const dl = $("#detail-fields");
  dl.replaceChildren();
  for (const k of ["seq", "at", "kind", "trace", "actor", "body_sha256", "prev", "hash"]) {
    dl.appendChild(el("dt", k));
    dl.appendChild(el("dd")).appendChild(el("code", String(e[k])));
  }
  dl.appendChild(el("dt", "refs"));
  const refs = dl.appendChild(el("dd"));
  for (const [k, v] of Object.entries(e.refs || {})) refs.appendChild(el("code", `${k}=${v}`, { class: "ref" }));
  $("#entry-body").textContent = JSON.stringify(e.body, null, 2);
  $("#detail-title").textContent = `Entry ${e.seq}: ${e.kind}`;
  d.hidden = false;
  d.scrollIntoView({ behavior: "smooth", block: "start" });
}

async function verify() {
  const out = $("#verify-status");
  try {
    const v = await api("/v1/ledger/verify");
    out.className = "banner " + (v.ok ? "ok" : "error");
    out.dataset.ok = String(v.ok);
    out.textContent = v.ok
      ? `Verified: ${v.entries} entries, head ${v.head ? v.head.slice(0, 16) + "…" : "—"}`
      : `Verification failed at seq ${v.first_bad_seq}: ${v.problem}`;
  } catch (err) {
    out.className = "banner error";
    out.dataset.ok = "false";
    out.textContent = `Verification unavailable: ${err.message}`;
  }
}

function setupLedgerControls() {
  const l = state.ledger;
  $("#ledger-filter").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    Object.assign(l, { trace: f.trace.value.trim(), kind: f.kind.value, after: null, stack: [] });
    loadLedger();
  });
  $("#ledger-filter").addEventListener("reset", () => {
    Object.assign(l, { trace: "", kind: "", after: null, stack: [] });
    setTimeout(loadLedger);
  });
  $("#page-next").addEventListener("click", () => {
    l.stack.push(l.after);
    l.after = l.next;
    loadLedger();
  });
  $("#page-prev").addEventListener("click", () => {
    l.after = l.stack.length ? l.stack.pop() : Math.max(0, l.after - PAGE);
    loadLedger();
  });
  $("#page-latest").addEventListener("click", () => {
    Object.assign(l, { after: null, stack: [] });
    loadLedger();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setupLedgerControls();
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => {});
  start();
});
