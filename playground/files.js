// Files the model made with code execution (`file` events): each gets a download button.
// The download goes through fetch with the page's key (a plain link cannot send the
// Authorization header), and the bytes are saved under the file's own name.

import { download, formatBytes } from './dom.js';

export function fileUrl(fileId) {
  return `/api/files/${encodeURIComponent(fileId)}`;
}

/** What the button says: the name (the id when the gateway could not learn it) and size. */
export function fileLabel(file) {
  const name = file.filename || file.file_id;
  return file.size_bytes != null ? `${name} (${formatBytes(file.size_bytes)})` : name;
}

/** Fetch the file with `headers` and hand its bytes to `save` (the browser's download by
 * default); resolves to the byte count, throws the gateway's error object (with the HTTP
 * `status`) on a refusal. */
export async function downloadFile(file, headers, { fetchImpl = globalThis.fetch, save = saveBlob } = {}) {
  const response = await fetchImpl(fileUrl(file.file_id), { headers });
  if (!response.ok) {
    const text = await response.text().catch(() => '');
    let error = { code: `HTTP ${response.status}`, message: text.slice(0, 300) || 'download failed' };
    try {
      const body = JSON.parse(text);
      if (body && typeof body.error === 'object') error = { ...body.error, status: response.status };
    } catch {
      // not JSON: keep the status
    }
    throw error;
  }
  const blob = await response.blob();
  save(blob, file.filename || file.file_id);
  return blob.size;
}

function saveBlob(blob, filename) {
  download(filename, blob.type || 'application/octet-stream', blob);
}
