// The console's only script: forms marked data-api are sent to the admin API as JSON, with the
// session's CSRF token, and the page follows on success or shows the error in the form.

const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";

function explain(body, status) {
  if (Array.isArray(body?.msg_detail) && body.msg_detail.length > 0) {
    return body.msg_detail
      .map((d) => `${(d.loc || []).filter((p) => p !== "body").join(".")}: ${d.msg}`)
      .join("; ");
  }
  if (status === 403) return "Your role may not do this.";
  if (status === 401) return "Wrong e-mail address or password, or your session has ended.";
  if (status === 429) return "Too many attempts: wait a few minutes.";
  return body?.msg || `Failed (${status})`;
}

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.dataset.api === undefined) return;
  event.preventDefault();
  const out = form.querySelector('[role="status"]');
  const body = {};
  for (const [key, value] of new FormData(form)) body[key] = value;
  for (const key of (form.dataset.booleans || "").split(",").filter(Boolean))
    body[key] = body[key] === "true";
  const url = shapeRequest(form, body);
  let res;
  try {
    res = await fetch(url, {
      method: form.dataset.method || "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch {
    if (out) out.textContent = "The service did not answer.";
    return;
  }
  if (res.ok) {
    location.assign(await nextPage(form, res));
    return;
  }
  const answer = await res.json().catch(() => null);
  if (out) out.textContent = explain(answer, res.status);
});

// Partner and catalog forms. data-lists: one value a line (or comma-separated) sent as an array;
// data-nulls: an empty field sent as null; data-integers: sent as a number (empty: null);
// data-omit-empty: an empty field left out; data-path: the field's value ends the URL (not sent).
function shapeRequest(form, body) {
  const names = (attr) => (form.dataset[attr] || "").split(",").filter(Boolean);
  for (const key of names("lists"))
    body[key] = String(body[key] ?? "")
      .split(/[\n,]/)
      .map((v) => v.trim())
      .filter((v) => v !== "");
  for (const key of names("omitEmpty")) if (body[key] === "") delete body[key];
  for (const key of names("nulls")) if (String(body[key] ?? "").trim() === "") body[key] = null;
  for (const key of names("integers"))
    if (key in body) body[key] = String(body[key]).trim() === "" ? null : Number(body[key]);
  let url = form.dataset.api;
  for (const key of names("path")) {
    url += encodeURIComponent(String(body[key] ?? "").trim());
    delete body[key];
  }
  return url;
}

// data-next-result: the next page, with {field} taken from the answer's result (a new record's id).
async function nextPage(form, res) {
  const template = form.dataset.nextResult;
  if (template === undefined) return form.dataset.next || location.href;
  const answer = await res.json().catch(() => null);
  const result = answer?.result ?? {};
  return template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(String(result[k] ?? "")));
}
