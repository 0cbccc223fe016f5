// Talking to hone serve: JSON requests with the token in the Authorization header (never in a
// URL), and server-sent events read through fetch so that the header can be sent there too.

const TOKEN_KEY = "hone-token";

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value.trim());
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

// Set by the page frame: asks for the token again after the server refused it (401: none sent,
// 403: wrong) and resolves true once a new one is given, so the request is sent again and what
// the user was doing goes on; false when they closed the dialog.
let askToken = null;

export function onTokenRefused(fn) {
  askToken = fn;
}

async function failure(response) {
  let detail = response.statusText;
  try {
    const body = await response.json();
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
  } catch (_) {
    /* not JSON */
  }
  return new ApiError(response.status, detail);
}

// fetch with the token; a refused token is asked for again and the request sent again with it.
async function send(path, init = {}, extra = {}) {
  for (;;) {
    const response = await fetch(path, { ...init, headers: headers(extra) });
    if (response.ok) return response;
    const error = await failure(response);
    const refused = response.status === 401 || response.status === 403;
    if (!refused || !askToken || !(await askToken(error))) throw error;
  }
}

export async function get(path) {
  return (await send(path)).json();
}

// A text body (an SVG drawing), with the token like every other read.
export async function getText(path) {
  return (await send(path, {}, { Accept: "*/*" })).text();
}

export async function post(path, body = {}) {
  const init = { method: "POST", body: JSON.stringify(body) };
  return (await send(path, init, { "Content-Type": "application/json" })).json();
}

export function studyPath(name, tail = "") {
  return `/api/studies/${encodeURIComponent(name)}${tail}`;
}

// Reads an event stream until `signal` aborts; calls onEvent(kind, data) for each event.
export async function stream(path, onEvent, signal) {
  const response = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!response.ok) throw new ApiError(response.status, response.statusText);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let kind = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) kind = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(kind, JSON.parse(data.join("\n")));
    }
  }
}

// Follows a stream for as long as the page shows it, reconnecting after a dropped connection.
export function follow(path, onEvent, onStatus = () => {}) {
  const controller = new AbortController();
  (async () => {
    while (!controller.signal.aborted) {
      try {
        onStatus("live");
        await stream(path, onEvent, controller.signal);
      } catch (error) {
        if (controller.signal.aborted) return;
        onStatus(`disconnected (${error.message}); retrying`);
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  })();
  return () => controller.abort();
}
