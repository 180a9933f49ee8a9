import { createHash } from 'node:crypto';
import { CLICK_ID_FIELDS, UTM_FIELDS } from '../touchpoints/derive.js';

/** The order fields that say who the customer is, their hashes included: what erasure removes. */
export const PERSONAL_ORDER_FIELDS = [
  'customer_email',
  'hashed_customer_email',
  'customer_phone_number',
  'hashed_customer_phone_number',
  'customer_name',
  'customer_ip_address',
  'customer_shipping_address',
] as const;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What a text holding an erased identifier becomes (in a URL, percent-encoded). */
const ERASED_TEXT = '[erased]';
const ERASED_IN_URL = encodeURIComponent(ERASED_TEXT);

/** Identifiers shorter than this are not looked for in texts: they would be found by chance ("42" in every number). */
const MIN_IDENTIFIER_LENGTH = 4;

/** Query parameters a touchpoint's URLs keep through an erasure: what attribution reads (lower case, as it reads them). */
const KEPT_PARAMETERS = new Set([...UTM_FIELDS, ...CLICK_ID_FIELDS].map((name) => name.toLowerCase()));

/** A text with each run of percent-escapes decoded on its own: one stray `%` ("50%off") leaves the others decoded. */
function decoded(text: string): string {
  return text.replace(/(?:%[0-9a-f]{2})+/gi, (escapes) => {
    try {
      return decodeURIComponent(escapes);
    } catch {
      return escapes;
    }
  });
}

const parameterName = (pair: string) => decoded(pair.split('=', 1)[0]!.replaceAll('+', ' ')).toLowerCase();

/**
 * A URL without what may say who visited: its fragment, and the parameters of its query other
 * than UTMs and click ids (kept as they were written, in their order). Its scheme, host and path
 * stay: they name the shop's page or the referring site, which channels are derived from.
 */
export function withoutPersonalQuery(url: string): string {
  const [beforeFragment = ''] = url.split('#', 1);
  const start = beforeFragment.indexOf('?');
  if (start === -1) return beforeFragment;
  const kept = beforeFragment
    .slice(start + 1)
    .split('&')
    .filter((pair) => pair !== '' && KEPT_PARAMETERS.has(parameterName(pair)));
  const page = beforeFragment.slice(0, start);
  return kept.length > 0 ? `${page}?${kept.join('&')}` : page;
}

/**
 * An e-mail as orders hold it in either form: in lower case without surrounding spaces, and the
 * SHA-256 of that (hexadecimal), which is how shops normalise before hashing.
 */
export function emailForms(email: string): { plain: string; hashed: string } {
  const plain = email.trim().toLowerCase();
  return { plain, hashed: sha256(plain) };
}

/** What names an erased customer: found in its orders, or given by the request. */
export interface CustomerIdentifiers {
  customerIds: readonly string[];
  emails: readonly string[];
  phones: readonly string[];
  names: readonly string[];
  /** Hashed e-mails and phone numbers, as orders hold them. */
  hashes: readonly string[];
}

const NAME_SEPARATORS = [' ', '+', '-', '_', '.', ''];

/** A text without its accents, compared in any case: "İlkay Gündoğan" and "ilkay-gundogan" hold one name. */
const folded = (text: string) => text.normalize('NFKD').replace(/\p{M}/gu, '');

/**
 * The forms each identifier is looked for in (docs/decisions.md, "Customer erasure"), folded;
 * not in lower case, which the pattern ignores (lowering first changes some letters: "İ").
 */
function identifierForms({ customerIds, emails, phones, names, hashes }: CustomerIdentifiers): string[] {
  const trimmed = (text: string) => folded(text.trim());
  const phoneForms = phones.flatMap((phone) => {
    const digits = phone.replace(/\D/g, '');
    return digits.length >= 7 ? [trimmed(phone), digits, `+${digits}`] : [trimmed(phone)];
  });
  const nameForms = names.flatMap((name) => {
    const words = trimmed(name).split(/\s+/).filter(Boolean);
    return NAME_SEPARATORS.map((separator) => words.join(separator));
  });
  const forms = [...customerIds, ...emails, ...hashes].map(trimmed).concat(phoneForms, nameForms);
  const oneOfEachCase = new Map(forms.map((form) => [form.toLowerCase(), form]));
  return [...oneOfEachCase.values()].filter((form) => form.length >= MIN_IDENTIFIER_LENGTH);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const EMAIL_LIKE = /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu;
const PHONE_LIKE = /\+?\d[\d\s().-]{5,}\d/g;

/** An e-mail found in a text, and those it may end: a code "WELCOME-jane@example.com" holds "jane@example.com". */
function emailEndings(found: string): string[] {
  const lower = found.toLowerCase();
  const starts = [0, ...[...lower.slice(0, lower.indexOf('@')).matchAll(/[^\p{L}\p{N}]/gu)].map((separator) => separator.index + 1)];
  return starts.map((start) => lower.slice(start));
}

/** The hashes a text's e-mails and phone numbers have, normalised as shops hash them: e-mails in lower case, phone numbers as +digits. */
function hashesIn(text: string): string[] {
  const emails = [...text.matchAll(EMAIL_LIKE)].flatMap(([email]) => emailEndings(email).map(sha256));
  const phones = [...text.matchAll(PHONE_LIKE)].map(([phone]) => sha256(`+${phone.replace(/\D/g, '')}`));
  return [...emails, ...phones];
}

/**
 * Tells whether a text holds one of a customer's identifiers: as written, percent-decoded, or
 * with `+` read as a space, in any case, and not inside a longer word or number ("jane" is not in
 * "janet", "4242" not in "142424"); or an e-mail or phone number whose hash is one of the
 * customer's (an order may hold its e-mail hashed alone).
 */
export function identifierFinder(identifiers: CustomerIdentifiers): (text: string) => boolean {
  const forms = identifierForms(identifiers).sort((a, b) => b.length - a.length);
  const hashes = new Set(identifiers.hashes.map((hash) => hash.trim().toLowerCase()));
  const pattern = forms.length === 0 ? undefined : new RegExp(`(?<![\\p{L}\\p{N}])(?:${forms.map(escapeRegExp).join('|')})(?![\\p{L}\\p{N}])`, 'iu');
  // Hashes are of the e-mail or number as written, accents and all.
  const holds = (text: string) => pattern?.test(folded(text)) === true || (hashes.size > 0 && hashesIn(text).some((hash) => hashes.has(hash)));
  return (text) => [text, decoded(text), decoded(text.replaceAll('+', ' '))].some(holds);
}

export type HoldsIdentifier = ReturnType<typeof identifierFinder>;

/** A text, or ERASED_TEXT when it holds an identifier. */
export const redactedText = (text: string, holdsIdentifier: HoldsIdentifier) => (holdsIdentifier(text) ? ERASED_TEXT : text);

/**
 * A URL through an erasure: withoutPersonalQuery, then each path segment and kept parameter's
 * value that holds an identifier replaced by ERASED_TEXT (percent-encoded); a URL that still
 * holds one (in its host, say) is replaced whole.
 */
export function redactedUrl(url: string, holdsIdentifier: HoldsIdentifier): string {
  const page = withoutPersonalQuery(url);
  const queryStart = page.indexOf('?');
  const [beforeQuery, query] = queryStart === -1 ? [page, undefined] : [page.slice(0, queryStart), page.slice(queryStart + 1)];
  const { origin = '', path = '' } = /^(?<origin>[a-z][a-z0-9+.-]*:\/\/[^/]*)?(?<path>.*)$/is.exec(beforeQuery)!.groups!;
  const redactedPath = path
    .split('/')
    .map((segment) => (holdsIdentifier(segment) ? ERASED_IN_URL : segment))
    .join('/');
  const redactedQuery = query
    ?.split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      return equals !== -1 && holdsIdentifier(pair.slice(equals + 1)) ? `${pair.slice(0, equals)}=${ERASED_IN_URL}` : pair;
    })
    .join('&');
  const redacted = `${origin}${redactedPath}${redactedQuery === undefined ? '' : `?${redactedQuery}`}`;
  return holdsIdentifier(redacted) ? ERASED_TEXT : redacted;
}
