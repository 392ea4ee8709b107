// Server-sent events over fetch: a line parser that survives chunk boundaries anywhere
// (inside a line, between \r and \n, inside a multi-byte character), and a reader loop.

/**
 * A push parser for the text/event-stream format. `onEvent({id, data})` runs for each
 * complete event; `onComment(text)` for comment lines such as `: ping`.
 */
export function createSseParser({ onEvent, onComment = () => {} }) {
  let buffer = '';
  let data = [];
  let id = null;

  function field(line) {
    if (line === '') {
      if (data.length) onEvent({ id, data: data.join('\n') });
      data = [];
      id = null;
      return;
    }
    if (line.startsWith(':')) {
      onComment(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') data.push(value);
    else if (name === 'id' && !value.includes('\0')) id = value;
    // `event:` and `retry:` are not used by this protocol; ignore them.
  }

  return {
    push(text) {
      buffer += text;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== '\n' && c !== '\r') continue;
        // A trailing \r may be the first half of \r\n: wait for the next chunk.
        if (c === '\r' && i + 1 === buffer.length) break;
        field(buffer.slice(start, i));
        if (c === '\r' && buffer[i + 1] === '\n') i++;
        start = i + 1;
      }
      buffer = buffer.slice(start);
    },
    /** The stream ended: an unterminated last event is dropped, as the spec says. */
    end() {
      buffer = '';
      data = [];
      id = null;
    },
  };
}

/**
 * Read a fetch Response body as SSE until it ends. Calls `onChunk()` for every chunk
 * (liveness), `onEvent` / `onComment` as the parser finds them. Rejects on abort or a
 * network error; resolves when the server closes the stream.
 */
export async function readSse(response, { onEvent, onComment, onChunk = () => {} }) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder('utf-8');
  const parser = createSseParser({ onEvent, onComment });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      onChunk();
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
  } finally {
    parser.end();
    try {
      reader.releaseLock();
    } catch {
      // Already released or errored: nothing to do.
    }
  }
}
