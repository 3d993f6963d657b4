// OpenAI media content parts -> Gemini `inlineData` / `fileData` parts.
// A `data:` URL travels inline; any other URL is handed to Gemini as a file
// URI, which needs a MIME type: it is read from the extension, or refused.
import type { ContentPart } from '../../domain.js';
import { GatewayError } from '../../errors.js';
import { isObj, ownEntry } from '../json-shape.js';
import { refuseUnknownMembers } from '../known-members.js';

type Json = Record<string, any>;

const BY_EXTENSION: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif',
  heic: 'image/heic', heif: 'image/heif', pdf: 'application/pdf',
  wav: 'audio/wav', mp3: 'audio/mp3', flac: 'audio/flac', ogg: 'audio/ogg',
  mp4: 'video/mp4', mov: 'video/quicktime', webm: 'video/webm',
};

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

function fromDataUrl(url: string, at: string): Json {
  const m = /^data:([^;,]+)((?:;[^;,]*)*);base64,(.*)$/s.exec(url);
  if (!m) return refuse(at, `${at} must be a base64 data URL (data:<type>;base64,...).`);
  return { inlineData: { mimeType: m[1], data: m[3] } };
}

function fromUrl(url: unknown, at: string): Json {
  if (typeof url !== 'string' || url === '') return refuse(at, `${at} must be a URL.`);
  if (url.startsWith('data:')) return fromDataUrl(url, at);
  let ext = '';
  try { ext = new URL(url).pathname.split('.').pop()!.toLowerCase(); } catch { refuse(at, `${at} is not a valid URL.`); }
  const mimeType = ownEntry(BY_EXTENSION, ext);
  if (!mimeType) refuse(at, `${at}: Gemini needs the media type of a linked file, and none can be told from its extension; send it as a data URL.`);
  return { fileData: { mimeType, fileUri: url } };
}

/**
 * Each payload's members. `image_url.detail` is a resolution hint: the model
 * still sees the image, so it is not carried (Gemini sets resolution per
 * request); a file's `filename` names what the data already is.
 */
const IMAGE_URL_KEYS = new Set(['url', 'detail']);
const AUDIO_KEYS = new Set(['data', 'format']);
const FILE_KEYS = new Set(['file_data', 'filename']);

/** The Gemini part for an image, audio or file part, or undefined when the part type is not media. */
export function mediaPart(p: ContentPart, at: string): Json | undefined {
  switch (p?.type) {
    case 'image_url': {
      const image = p.image_url;
      if (isObj(image)) refuseUnknownMembers(image, IMAGE_URL_KEYS, `${at}.image_url`, 'Gemini');
      return fromUrl(isObj(image) ? image.url : image, `${at}.image_url.url`);
    }
    case 'input_audio': {
      const audio = p.input_audio as Json | undefined;
      if (!isObj(audio) || typeof audio.data !== 'string' || (audio.format !== 'wav' && audio.format !== 'mp3')) {
        return refuse(`${at}.input_audio`, `${at}.input_audio must hold base64 data and a format of "wav" or "mp3".`);
      }
      refuseUnknownMembers(audio, AUDIO_KEYS, `${at}.input_audio`, 'Gemini');
      return { inlineData: { mimeType: `audio/${audio.format}`, data: audio.data } };
    }
    case 'file': {
      const file = p.file as Json | undefined;
      if (isObj(file) && typeof file.file_data === 'string') {
        refuseUnknownMembers(file, FILE_KEYS, `${at}.file`, 'Gemini');
        return fromDataUrl(file.file_data, `${at}.file.file_data`);
      }
      // A file_id names a file in OpenAI's storage, which Gemini cannot read.
      return refuse(`${at}.file`, `${at}.file must carry file_data; OpenAI file ids cannot be read by Gemini models.`);
    }
    default:
      return undefined;
  }
}
