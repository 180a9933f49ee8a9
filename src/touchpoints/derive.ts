/**
 * What a touchpoint says once read: its UTMs and click ids (from its fields, else from its
 * landing_url's query), the ad object it names (platform_name, platform_account_id, campaign_id,
 * adset_id, ad_id) and its channel. Pure: the rules are written down in docs/decisions.md
 * ("Touchpoints and identities") and tested in test/touchpoint-derivation.test.ts.
 */

export const UTM_FIELDS = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content'] as const;
export type UtmField = (typeof UTM_FIELDS)[number];

/** The click ids, in the order that decides between several, with the platform each names. */
export const CLICK_ID_PLATFORMS = {
  gclid: 'google',
  gbraid: 'google',
  wbraid: 'google',
  fbclid: 'meta',
  ttclid: 'tiktok',
  msclkid: 'microsoft',
  twclid: 'x',
  li_fat_id: 'linkedin',
  ScCid: 'snapchat',
  epik: 'pinterest',
} as const;
export type ClickIdField = keyof typeof CLICK_ID_PLATFORMS;
export const CLICK_ID_FIELDS = Object.keys(CLICK_ID_PLATFORMS) as ClickIdField[];

export const AD_FIELDS = ['platform_name', 'platform_account_id', 'campaign_id', 'adset_id', 'ad_id'] as const;
export type AdField = (typeof AD_FIELDS)[number];

export const CHANNELS = ['paid', 'email', 'sms', 'organic_social', 'organic_search', 'referral', 'direct', 'other'] as const;
export type Channel = (typeof CHANNELS)[number];

/** Longest UTM and click id taken, from a field or from landing_url's query. */
export const MAX_UTM_LENGTH = 255;
export const MAX_CLICK_ID_LENGTH = 1024;

/** utm_medium values (trimmed, lower case) and the channel each means; any other medium is `other`. */
const MEDIUM_CHANNELS: Record<string, Channel> = {
  ...Object.fromEntries(
    ['cpc', 'ppc', 'cpm', 'cpv', 'cpa', 'paid', 'paid_social', 'paid-social', 'paidsocial', 'paid_search', 'paid-search', 'paidsearch', 'display', 'banner', 'retargeting'].map(
      (medium) => [medium, 'paid'],
    ),
  ),
  ...Object.fromEntries(['email', 'e-mail', 'e_mail', 'newsletter'].map((medium) => [medium, 'email'])),
  ...Object.fromEntries(['sms', 'mms', 'text'].map((medium) => [medium, 'sms'])),
  ...Object.fromEntries(['social', 'organic_social', 'organic-social', 'social-network', 'social_network', 'social-media', 'social_media', 'sm'].map((medium) => [medium, 'organic_social'])),
  organic: 'organic_search',
};

/** Search engines: google.<country> (google.com, google.co.uk, google.com.au), and these domains with their subdomains. */
const GOOGLE_SEARCH = /^google\.(?:com?\.)?[a-z]{2,3}$/;
const SEARCH_ENGINE_DOMAINS = [
  'bing.com', 'duckduckgo.com', 'search.yahoo.com', 'search.yahoo.co.jp', 'baidu.com', 'yandex.ru', 'yandex.com', 'ecosia.org',
  'search.brave.com', 'startpage.com', 'qwant.com', 'search.naver.com', 'seznam.cz', 'ask.com', 'sogou.com',
];
/** Social networks: these domains with their subdomains (l.facebook.com, m.youtube.com, …). */
const SOCIAL_DOMAINS = [
  'facebook.com', 'fb.com', 'messenger.com', 'instagram.com', 'threads.net', 'x.com', 'twitter.com', 't.co', 'linkedin.com', 'lnkd.in',
  'tiktok.com', 'pinterest.com', 'pin.it', 'snapchat.com', 'reddit.com', 'youtube.com', 'youtu.be', 'tumblr.com', 'whatsapp.com', 'wa.me',
  't.me', 'vk.com', 'quora.com', 'bsky.app', 'mastodon.social',
];

export interface TouchpointInput {
  touchpoint_id: string;
  occurred_at: string;
  type?: 'visit' | 'view';
  visitor_id?: string;
  customer_id?: string;
  landing_url?: string;
  referrer?: string;
  [field: string]: unknown;
}

/** A touchpoint as stored: its own fields, and what is derived from them. */
export interface DerivedTouchpoint extends Record<UtmField, string | null>, Record<AdField, string> {
  touchpoint_id: string;
  occurred_at: string;
  type: 'visit' | 'view';
  visitor_id: string | null;
  customer_id: string | null;
  landing_url: string | null;
  referrer: string | null;
  click_ids: Partial<Record<ClickIdField, string>>;
  channel: Channel;
}

/** A value of landing_url's query that cannot be taken: `param` names it, `msg` says why. */
export interface QueryProblem {
  param: string;
  msg: string;
}

/** A client's mapping of utm_source values to platform names, such as {"fb": "meta"}. */
export type SourcePlatforms = Readonly<Record<string, string>>;

/** "" is as good as absent: trackers send empty parameters for the ones they do not have. */
const given = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * The parameters of a URL's query (between `?` and `#`), by name in lower case, the first
 * non-empty value of each. Relative URLs have queries too; a URL without one has none.
 */
export function queryParameters(url: string | undefined): Map<string, string> {
  const parameters = new Map<string, string>();
  const withoutFragment = url?.split('#', 1)[0] ?? '';
  const start = withoutFragment.indexOf('?');
  if (start === -1) return parameters;
  for (const [name, value] of new URLSearchParams(withoutFragment.slice(start + 1))) {
    const key = name.toLowerCase();
    if (value !== '' && !parameters.has(key)) parameters.set(key, value);
  }
  return parameters;
}

/** The host of an absolute URL, in lower case and without a leading `www.`; undefined for anything else. */
export function siteOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const host = new URL(url).hostname.toLowerCase();
    return host === '' ? undefined : host.replace(/^www\./, '');
  } catch {
    return undefined;
  }
}

/** Whether `host` is one of `domains` or a subdomain of one. */
const within = (host: string, domains: readonly string[]) =>
  domains.some((domain) => host.endsWith(domain) && (host.length === domain.length || host[host.length - domain.length - 1] === '.'));

/** The channel of a referrer to `landingSite`, for a touchpoint that names no medium, campaign or click. */
function referrerChannel(referrerSite: string | undefined, landingSite: string | undefined): Channel {
  if (referrerSite === undefined) return 'direct';
  if (GOOGLE_SEARCH.test(referrerSite) || within(referrerSite, SEARCH_ENGINE_DOMAINS)) return 'organic_search';
  if (within(referrerSite, SOCIAL_DOMAINS)) return 'organic_social';
  return referrerSite === landingSite ? 'direct' : 'referral';
}

/** Reads a touchpoint: what it is stored as, or what of its landing_url's query cannot be stored. */
export function deriveTouchpoint(input: TouchpointInput, sourcePlatforms: SourcePlatforms): DerivedTouchpoint | QueryProblem[] {
  const landingUrl = given(input.landing_url);
  const query = queryParameters(landingUrl);
  const problems: QueryProblem[] = [];
  /** A field's value, else the query's, bounded as the field is. */
  const read = (field: string, maxLength: number): string | undefined => {
    const own = given(input[field]);
    if (own !== undefined) return own;
    const fromQuery = query.get(field.toLowerCase());
    if (fromQuery === undefined) return undefined;
    if (fromQuery.length > maxLength) problems.push({ param: field, msg: `${field} in landing_url's query is longer than ${maxLength} characters` });
    else if (fromQuery.includes('\u0000')) problems.push({ param: field, msg: `${field} in landing_url's query holds a NUL character` });
    else return fromQuery;
    return undefined;
  };

  // Built field by field, as is the touchpoint returned: every touchpoint sent is derived, and an
  // object assembled from entries or spread into another is several times the allocation.
  const utm: Record<UtmField, string | null> = {
    utm_source: read('utm_source', MAX_UTM_LENGTH) ?? null,
    utm_medium: read('utm_medium', MAX_UTM_LENGTH) ?? null,
    utm_campaign: read('utm_campaign', MAX_UTM_LENGTH) ?? null,
    utm_term: read('utm_term', MAX_UTM_LENGTH) ?? null,
    utm_content: read('utm_content', MAX_UTM_LENGTH) ?? null,
  };
  const clickIds: Partial<Record<ClickIdField, string>> = {};
  for (const field of CLICK_ID_FIELDS) {
    const value = read(field, MAX_CLICK_ID_LENGTH);
    if (value !== undefined) clickIds[field] = value;
  }
  if (problems.length > 0) return problems;

  const source = utm.utm_source ?? undefined;
  const mappedSource = source !== undefined && Object.hasOwn(sourcePlatforms, source) ? sourcePlatforms[source] : undefined;
  const clickedOn = CLICK_ID_FIELDS.find((field) => clickIds[field] !== undefined);
  const explicit = given(input.platform_name) ?? given(input.campaign_id) ?? mappedSource;
  const medium = utm.utm_medium?.trim().toLowerCase();

  let channel: Channel;
  if (clickedOn !== undefined) channel = 'paid';
  else if (medium) channel = MEDIUM_CHANNELS[medium] ?? 'other';
  else if (explicit !== undefined) channel = 'paid';
  else if (UTM_FIELDS.some((field) => utm[field] !== null)) channel = 'other';
  else channel = referrerChannel(siteOf(given(input.referrer)), siteOf(landingUrl));

  return {
    touchpoint_id: input.touchpoint_id,
    occurred_at: input.occurred_at,
    type: input.type ?? 'visit',
    visitor_id: given(input.visitor_id) ?? null,
    customer_id: given(input.customer_id) ?? null,
    landing_url: landingUrl ?? null,
    referrer: given(input.referrer) ?? null,
    utm_source: utm.utm_source,
    utm_medium: utm.utm_medium,
    utm_campaign: utm.utm_campaign,
    utm_term: utm.utm_term,
    utm_content: utm.utm_content,
    click_ids: clickIds,
    platform_name: given(input.platform_name) ?? mappedSource ?? source ?? (clickedOn && CLICK_ID_PLATFORMS[clickedOn]) ?? '',
    platform_account_id: given(input.platform_account_id) ?? '',
    campaign_id: given(input.campaign_id) ?? utm.utm_campaign ?? '',
    adset_id: given(input.adset_id) ?? utm.utm_term ?? '',
    ad_id: given(input.ad_id) ?? utm.utm_content ?? '',
    channel,
  };
}
