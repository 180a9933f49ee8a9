import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deriveTouchpoint, queryParameters, siteOf, type DerivedTouchpoint, type TouchpointInput } from '../src/touchpoints/derive.js';

const SHOP = 'https://www.shop.example/products/shirt';
const base: TouchpointInput = { touchpoint_id: 't1', occurred_at: '2024-03-08T09:00:00Z', visitor_id: 'v1' };

function derive(fields: Partial<TouchpointInput>, mapping: Record<string, string> = {}): DerivedTouchpoint {
  const result = deriveTouchpoint({ ...base, ...fields }, mapping);
  assert.ok(!Array.isArray(result), JSON.stringify(result));
  return result;
}

describe('channel', () => {
  const cases: [string, Partial<TouchpointInput>, string][] = [
    ['nothing at all', {}, 'direct'],
    ['a landing page alone', { landing_url: SHOP }, 'direct'],
    ['a referrer on the same site (www. or not)', { landing_url: SHOP, referrer: 'https://shop.example/cart' }, 'direct'],
    ['another site\'s referrer', { landing_url: SHOP, referrer: 'https://blog.example/post' }, 'referral'],
    ['a subdomain of the shop is another site', { landing_url: SHOP, referrer: 'https://blog.shop.example/' }, 'referral'],
    ['a referrer and no landing page', { referrer: 'https://blog.example/post' }, 'referral'],
    ['a referrer that is not an absolute URL counts as none', { landing_url: SHOP, referrer: 'blog.example/post' }, 'direct'],
    ['google.com', { landing_url: SHOP, referrer: 'https://www.google.com/' }, 'organic_search'],
    ['google.co.uk', { landing_url: SHOP, referrer: 'https://www.google.co.uk/' }, 'organic_search'],
    ['google.com.au', { referrer: 'https://google.com.au/search?q=shirt' }, 'organic_search'],
    ['mail.google.com is no search engine', { landing_url: SHOP, referrer: 'https://mail.google.com/' }, 'referral'],
    ['bing', { referrer: 'https://www.bing.com/search?q=x' }, 'organic_search'],
    ['duckduckgo', { referrer: 'https://duckduckgo.com/' }, 'organic_search'],
    ['a yahoo search subdomain', { referrer: 'https://uk.search.yahoo.com/' }, 'organic_search'],
    ['facebook (l.)', { referrer: 'https://l.facebook.com/l.php' }, 'organic_social'],
    ['instagram', { referrer: 'https://www.instagram.com/' }, 'organic_social'],
    ['t.co', { referrer: 'https://t.co/abc' }, 'organic_social'],
    ['a host that only ends like a social one', { referrer: 'https://notfacebook.com/' }, 'referral'],
    ['a click id in the URL wins over everything', { landing_url: `${SHOP}?gclid=abc&utm_medium=email`, referrer: 'https://www.google.com/' }, 'paid'],
    ['a click id field', { fbclid: 'xyz' }, 'paid'],
    ['utm_medium cpc', { utm_medium: 'cpc', utm_source: 'google' }, 'paid'],
    ['utm_medium in the URL, any case, spaces trimmed', { landing_url: `${SHOP}?utm_source=x&utm_medium=%20Paid_Social%20` }, 'paid'],
    ['display', { utm_medium: 'display' }, 'paid'],
    ['cpm', { utm_medium: 'cpm' }, 'paid'],
    ['ppc', { utm_medium: 'ppc' }, 'paid'],
    ['email', { utm_medium: 'email', utm_source: 'newsletter' }, 'email'],
    ['newsletter', { utm_medium: 'newsletter' }, 'email'],
    ['sms', { utm_medium: 'SMS' }, 'sms'],
    ['social', { utm_medium: 'social', referrer: 'https://blog.example/' }, 'organic_social'],
    ['organic', { utm_medium: 'organic', utm_source: 'google' }, 'organic_search'],
    ['another medium', { utm_medium: 'podcast' }, 'other'],
    ['a medium wins over an explicit campaign', { utm_medium: 'email', campaign_id: 'c1' }, 'email'],
    ['an explicit platform and no medium', { platform_name: 'meta' }, 'paid'],
    ['an explicit campaign and no medium', { campaign_id: 'c1', referrer: 'https://www.google.com/' }, 'paid'],
    ['UTMs without a medium', { utm_source: 'partner', utm_campaign: 'spring' }, 'other'],
    ['UTMs without a medium win over a search referrer', { utm_campaign: 'spring', referrer: 'https://www.google.com/' }, 'other'],
    ['empty UTMs are absent', { utm_source: '', utm_medium: '', referrer: 'https://www.google.com/' }, 'organic_search'],
  ];
  for (const [what, fields, channel] of cases) {
    test(`${what}: ${channel}`, () => assert.equal(derive(fields).channel, channel));
  }

  test('a utm_source the mapping names is an explicit platform: paid without a medium', () => {
    assert.equal(derive({ utm_source: 'fb', utm_campaign: 'c' }, { fb: 'meta' }).channel, 'paid');
    assert.equal(derive({ utm_source: 'fb', utm_campaign: 'c' }, {}).channel, 'other');
  });
});

describe('the ad object', () => {
  test('UTMs name it: utm_source the platform, utm_campaign, utm_term, utm_content the campaign, adset and ad', () => {
    const touchpoint = derive({ utm_source: 'google', utm_medium: 'cpc', utm_campaign: 'c1', utm_term: 'as1', utm_content: 'ad1' });
    assert.deepEqual(
      [touchpoint.platform_name, touchpoint.platform_account_id, touchpoint.campaign_id, touchpoint.adset_id, touchpoint.ad_id],
      ['google', '', 'c1', 'as1', 'ad1'],
    );
  });

  test('given fields override the UTMs, the mapping and the click id', () => {
    const touchpoint = derive(
      { utm_source: 'fb', utm_campaign: 'c1', utm_term: 'as1', utm_content: 'ad1', gclid: 'g', platform_name: 'tiktok', platform_account_id: 'acc', campaign_id: 'C', adset_id: 'AS', ad_id: 'AD' },
      { fb: 'meta' },
    );
    assert.deepEqual(
      [touchpoint.platform_name, touchpoint.platform_account_id, touchpoint.campaign_id, touchpoint.adset_id, touchpoint.ad_id],
      ['tiktok', 'acc', 'C', 'AS', 'AD'],
    );
  });

  test('utm_source goes through the client\'s mapping (exact, case-sensitive), as is when unmapped', () => {
    const mapping = { fb: 'meta', ig: 'meta', adwords: 'google' };
    assert.equal(derive({ utm_source: 'ig' }, mapping).platform_name, 'meta');
    assert.equal(derive({ utm_source: 'adwords', gclid: 'x' }, mapping).platform_name, 'google');
    assert.equal(derive({ utm_source: 'FB' }, mapping).platform_name, 'FB');
    assert.equal(derive({ utm_source: 'constructor' }, mapping).platform_name, 'constructor', 'only the mapping\'s own keys');
  });

  test('without a platform field or utm_source, the click id names the platform', () => {
    const platforms: [string, string][] = [
      ['gclid', 'google'], ['gbraid', 'google'], ['wbraid', 'google'], ['fbclid', 'meta'], ['ttclid', 'tiktok'], ['msclkid', 'microsoft'],
      ['twclid', 'x'], ['li_fat_id', 'linkedin'], ['ScCid', 'snapchat'], ['epik', 'pinterest'],
    ];
    for (const [param, platform] of platforms) {
      const fromUrl = derive({ landing_url: `${SHOP}?${param}=id-1` });
      assert.deepEqual([fromUrl.platform_name, fromUrl.channel, fromUrl.click_ids], [platform, 'paid', { [param]: 'id-1' }], param);
      assert.equal(derive({ [param]: 'id-2' }).platform_name, platform, param);
    }
    assert.equal(derive({ landing_url: `${SHOP}?sccid=lower` }).platform_name, 'snapchat', 'parameter names in any case');
  });

  test('several click ids: the first in the list order names the platform; all are kept', () => {
    const touchpoint = derive({ landing_url: `${SHOP}?fbclid=f&gclid=g`, ttclid: 't' });
    assert.equal(touchpoint.platform_name, 'google');
    assert.deepEqual(touchpoint.click_ids, { gclid: 'g', fbclid: 'f', ttclid: 't' });
  });

  test('nothing names one: all empty', () => {
    const touchpoint = derive({ referrer: 'https://www.google.com/' });
    assert.deepEqual([touchpoint.platform_name, touchpoint.campaign_id, touchpoint.adset_id, touchpoint.ad_id], ['', '', '', '']);
  });
});

describe('reading landing_url', () => {
  test('UTMs and click ids missing from the fields are read from the query; fields win', () => {
    const touchpoint = derive({
      landing_url: `${SHOP}?utm_source=google&utm_medium=cpc&utm_campaign=from%20url&utm_term=t&utm_content=c&gclid=G1#utm_source=fragment`,
      utm_campaign: 'from field',
      gclid: '',
    });
    assert.deepEqual(
      [touchpoint.utm_source, touchpoint.utm_medium, touchpoint.utm_campaign, touchpoint.utm_term, touchpoint.utm_content, touchpoint.click_ids],
      ['google', 'cpc', 'from field', 't', 'c', { gclid: 'G1' }],
    );
    assert.equal(touchpoint.campaign_id, 'from field');
  });

  test('the first non-empty value of a parameter; names in any case; relative URLs too', () => {
    assert.deepEqual([...queryParameters('/p?UTM_Source=&utm_source=a&utm_source=b+c')], [['utm_source', 'a']]);
    assert.deepEqual([...queryParameters('https://x.example/p#?utm_source=a')], []);
    assert.deepEqual([...queryParameters(undefined)], []);
    assert.equal(derive({ landing_url: '/?utm_medium=email' }).channel, 'email');
  });

  test('a value of the query too long or with a NUL is a problem, named', () => {
    const long = 'x'.repeat(256);
    assert.deepEqual(deriveTouchpoint({ ...base, landing_url: `${SHOP}?utm_campaign=${long}&gclid=a%00b` }, {}), [
      { param: 'utm_campaign', msg: "utm_campaign in landing_url's query is longer than 255 characters" },
      { param: 'gclid', msg: "gclid in landing_url's query holds a NUL character" },
    ]);
    assert.equal(derive({ landing_url: `${SHOP}?utm_campaign=${long}`, utm_campaign: 'given' }).campaign_id, 'given', 'a field given is not read from the query');
  });

  test('sites: host in lower case, without www.; none for what is not an absolute URL', () => {
    assert.equal(siteOf('https://WWW.Shop.Example:8443/x'), 'shop.example');
    assert.equal(siteOf('shop.example/x'), undefined);
    assert.equal(siteOf(undefined), undefined);
  });
});

test('the touchpoint itself: type visit by default, empty optional fields stored as absent', () => {
  const touchpoint = derive({ customer_id: 'c1', landing_url: '', referrer: '' });
  assert.deepEqual(
    [touchpoint.type, touchpoint.visitor_id, touchpoint.customer_id, touchpoint.landing_url, touchpoint.referrer, touchpoint.utm_source],
    ['visit', 'v1', 'c1', null, null, null],
  );
  assert.equal(derive({ type: 'view' }).type, 'view');
});
