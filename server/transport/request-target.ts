import type { NodeServerRequest } from "./rest/node-types.js";

/** A `%` that does not start a two-digit hex escape. */
const badEscape = /%(?![0-9A-Fa-f]{2})/;
/** The scheme and `//` of an absolute-form target. */
const absoluteForm = /^https?:\/\//i;
/** Longest part of a refused target quoted back. */
const maxQuotedChars = 60;

/**
 * Checks a request's target before anything routes on it, and returns why it must be answered 400,
 * or undefined. An absolute-form target (`GET http://host/ok HTTP/1.1`, which RFC 9112 §3.2.2 says
 * servers must accept) is reduced to its path and query in `req.url`; anything else that is not a
 * path (`*`, an authority, garbage) and any `%` that does not start an escape is refused. Never
 * throws, whatever the request line holds.
 */
export function checkRequestTarget(req: NodeServerRequest): string | undefined {
  const target = req.url ?? "";
  let path = target;
  if (target.charCodeAt(0) !== 47 /* "/" */) {
    const origin = originFormOf(target);
    if (origin === undefined) {
      return `the request target ${quote(target)} is not a path such as /ok (or an absolute http URL)`;
    }
    path = origin;
    req.url = origin;
  }
  if (path.includes("%") && badEscape.test(path)) {
    return `the request target ${quote(path)} has a % that does not start an escape such as %20`;
  }
  return undefined;
}

/** The path and query of a valid absolute http(s) URL, as sent (not normalised); else undefined. */
function originFormOf(target: string): string | undefined {
  if (!absoluteForm.test(target) || !URL.canParse(target)) return undefined;
  const authorityStart = target.indexOf("//") + 2;
  const rest = target.slice(authorityStart);
  const end = rest.search(/[/?#]/);
  if (end < 0) return "/";
  const tail = rest.slice(end).split("#", 1)[0]!;
  return tail.startsWith("/") ? tail : `/${tail}`;
}

function quote(text: string): string {
  return JSON.stringify(text.length > maxQuotedChars ? `${text.slice(0, maxQuotedChars)}…` : text);
}
