// A reader of the dispatcher's text/event-stream: `id:`, `event:` and `data:`
// fields, an event per blank line, `:` comments ignored. An event the stream
// ended in the middle of is dropped (its bytes will come again on a
// reconnect with Last-Event-ID), as kubectl harness's reader does.

export type SseEvent = { id?: string; event: string; data: string };

export async function* readSse(body: AsyncIterable<Buffer | string> | Iterable<Buffer | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffered = "";
  let current: { id?: string; event?: string; data: string[] } = { data: [] };
  for await (const chunk of body) {
    buffered += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl).replace(/\r$/, "");
      buffered = buffered.slice(nl + 1);
      if (line === "") {
        if (current.event !== undefined || current.data.length > 0) {
          const ev: SseEvent = { event: current.event ?? "message", data: current.data.join("\n") };
          if (current.id !== undefined) ev.id = current.id;
          yield ev;
        }
        current = { data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") current.id = value;
      else if (field === "event") current.event = value;
      else if (field === "data") current.data.push(value);
    }
  }
}
