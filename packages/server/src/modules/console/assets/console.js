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
  let res;
  try {
    res = await fetch(form.dataset.api, {
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
    location.assign(form.dataset.next || location.href);
    return;
  }
  const answer = await res.json().catch(() => null);
  if (out) out.textContent = explain(answer, res.status);
});
