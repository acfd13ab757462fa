/**
 * The header block of a multipart part as the JS SDK writes it, read without the general header
 * parser: the fast path of every part of a trace batch.
 */

/** The headers of a part as {@link sdkHead} reads them: what the general parser reads from them. */
export interface SdkHead {
  readonly name: string;
  readonly headers: Map<string, string>;
  readonly contentType: string;
  readonly lengthText: string;
}

/** How the SDKs open a part's header block, up to the part's name. */
const SDK_DISPOSITION = 'Content-Disposition: form-data; name="';
/** Where the Content-Disposition's value starts in that block. */
const SDK_DISPOSITION_VALUE = "Content-Disposition: ".length;
/** What follows the name in the SDKs' header block, up to the Content-Type's value. */
const SDK_AFTER_NAME = '"\r\nContent-Type: ';
/** The one parameter of the SDKs' Content-Type. */
const SDK_LENGTH = "; length=";

/**
 * The headers of a block laid out exactly as the JS SDK writes them: `Content-Disposition:
 * form-data; name="<name>"` then `Content-Type: <type>; length=<digits>`, with a name free of
 * backslashes and CR and a Content-Type of one parameter. Such a block reads the same through
 * the general parser (multipart-parser.ts); anything else is undefined and goes through it. The
 * general reading costs a regular expression and a dozen strings per part, and a body has hundreds.
 */
export function sdkHead(block: string): SdkHead | undefined {
  if (!block.startsWith(SDK_DISPOSITION)) return undefined;
  const quote = block.indexOf('"', SDK_DISPOSITION.length);
  if (quote <= SDK_DISPOSITION.length || !block.startsWith(SDK_AFTER_NAME, quote)) return undefined;
  const name = block.slice(SDK_DISPOSITION.length, quote);
  if (name.includes("\\") || name.includes("\r")) return undefined;
  const typeStart = quote + SDK_AFTER_NAME.length;
  if (block.includes("\r", typeStart)) return undefined;
  const contentType = block.slice(typeStart).trim();
  const semicolon = contentType.indexOf(";");
  if (semicolon === -1 || contentType.indexOf(";", semicolon + 1) !== -1) return undefined;
  if (!contentType.startsWith(SDK_LENGTH, semicolon)) return undefined;
  const lengthStart = semicolon + SDK_LENGTH.length;
  if (lengthStart === contentType.length) return undefined;
  for (let i = lengthStart; i < contentType.length; i++) {
    const c = contentType.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
  }
  const headers = new Map<string, string>()
    .set("content-disposition", block.slice(SDK_DISPOSITION_VALUE, quote + 1))
    .set("content-type", contentType);
  return { name, headers, contentType, lengthText: contentType.slice(lengthStart) };
}
