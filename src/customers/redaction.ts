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

/** Query parameters a touchpoint's URLs keep through an erasure: what attribution reads (lower case, as it reads them). */
const KEPT_PARAMETERS = new Set([...UTM_FIELDS, ...CLICK_ID_FIELDS].map((name) => name.toLowerCase()));

function parameterName(pair: string): string {
  const raw = pair.split('=', 1)[0]!;
  try {
    return decodeURIComponent(raw.replaceAll('+', ' ')).toLowerCase();
  } catch {
    return raw.toLowerCase();
  }
}

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
  return { plain, hashed: createHash('sha256').update(plain).digest('hex') };
}
