/*! Tributary pixel: one touchpoint per visit. Served as is by GET /pixel.js (docs/api.md, "The pixel"). */
(function (window, test) {
  'use strict';

  var COOKIE = '_trb';
  var YEAR_SECONDS = 365 * 24 * 60 * 60;
  var VISIT_TIMEOUT_MS = 30 * 60 * 1000;
  // The parameters that name a campaign: a landing with other values than the visit's starts a new visit.
  var CAMPAIGN_PARAMETERS = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content',
    'gclid', 'gbraid', 'wbraid', 'fbclid', 'ttclid', 'msclkid', 'twclid', 'li_fat_id', 'sccid', 'epik'];
  var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  function parseUrl(text) {
    try {
      return new URL(text);
    } catch (error) {
      return null;
    }
  }

  function withinSite(host, siteDomain) {
    return host === siteDomain || host.slice(-siteDomain.length - 1) === '.' + siteDomain;
  }

  /**
   * Where a page view comes from: its campaign parameters (names in any case, first non-empty
   * value), else the host of a referrer outside the site, else '' (an internal or direct view).
   */
  function sourceOf(url, referrer, siteDomain) {
    var parsed = parseUrl(url);
    var values = {};
    if (parsed) {
      parsed.searchParams.forEach(function (value, name) {
        name = name.toLowerCase();
        if (value && !values[name]) values[name] = value;
      });
    }
    var campaign = CAMPAIGN_PARAMETERS.filter(function (name) {
      return values[name];
    }).map(function (name) {
      return name + '=' + values[name];
    });
    if (campaign.length > 0) return 'campaign:' + campaign.join('&');
    var from = parseUrl(referrer);
    return from && from.hostname && !withinSite(from.hostname, siteDomain) ? 'referrer:' + from.hostname : '';
  }

  /** FNV-1a: the visit keeps a digest of its source, not the campaign's values themselves. */
  function digest(text) {
    var hash = 0x811c9dc5;
    for (var i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash.toString(36);
  }

  /**
   * The visit after a page view, and whether the view starts it. `visit` is null or
   * { id, last, source, identified }; `view` is { eventId, now, url, referrer, siteDomain }.
   */
  function pageView(visit, view) {
    var source = sourceOf(view.url, view.referrer, view.siteDomain);
    var starts = !visit || view.now - visit.last >= VISIT_TIMEOUT_MS || (source !== '' && digest(source) !== visit.source);
    if (!starts) return { starts: false, visit: { id: visit.id, last: view.now, source: visit.source, identified: visit.identified } };
    return { starts: true, visit: { id: view.eventId, last: view.now, source: source === '' ? '' : digest(source), identified: '' } };
  }

  /** The stored state, `visitor.visit.last.source.identified` ("" parts allowed), or null when unreadable. */
  function parseState(text) {
    var parts = String(text || '').split('.');
    if (parts.length !== 5 || !UUID.test(parts[0])) return null;
    var last = parseInt(parts[2], 36);
    var visit = UUID.test(parts[1]) && last > 0 ? { id: parts[1], last: last, source: parts[3], identified: parts[4] } : null;
    return { visitorId: parts[0], visit: visit };
  }

  function formatState(state) {
    var visit = state.visit;
    return [state.visitorId, visit.id, visit.last.toString(36), visit.source, visit.identified].join('.');
  }

  function idOf(value) {
    return (typeof value === 'string' && value !== '') || (typeof value === 'number' && isFinite(value)) ? String(value) : null;
  }

  /**
   * The event of a call, or null when the call is not one the pixel knows. `page` is
   * { eventId, now, visitorId, url, referrer }. Only a page view carries the page's addresses:
   * a link needs none.
   */
  function eventOf(type, properties, page) {
    var event = { event_id: page.eventId, type: type, occurred_at: new Date(page.now).toISOString(), visitor_id: page.visitorId };
    if (type === 'page') {
      event.url = page.url;
      if (page.referrer) event.referrer = page.referrer;
      return event;
    }
    var field = { identify: 'customer_id', purchase: 'order_id' }[type];
    if (!field) return null;
    var id = idOf(properties && properties[field]);
    if (id === null) return null;
    event[field] = id;
    return event;
  }

  function uuid(crypto) {
    if (crypto.randomUUID) return crypto.randomUUID();
    var bytes = crypto.getRandomValues(new Uint8Array(16));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    var hex = Array.prototype.map.call(bytes, function (byte) {
      return (byte + 0x100).toString(16).slice(1);
    }).join('');
    return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');
  }

  if (test) {
    test.VISIT_TIMEOUT_MS = VISIT_TIMEOUT_MS;
    test.sourceOf = sourceOf;
    test.pageView = pageView;
    test.parseState = parseState;
    test.formatState = formatState;
    test.eventOf = eventOf;
    test.uuid = uuid;
    return;
  }

  var document = window.document;
  var script = document.currentScript;
  var clientId = script && script.getAttribute('data-client-id');
  var queued = window.tributary && window.tributary.q;
  if (!clientId || (window.tributary && window.tributary.loaded)) return;
  var collector = new URL('/v1/collect', script.src).href;

  function readCookie() {
    var match = document.cookie.match(new RegExp('(?:^|; )' + COOKIE + '=([^;]*)'));
    return match && match[1];
  }

  function writeCookie(value, domain) {
    document.cookie = COOKIE + '=' + value + '; max-age=' + YEAR_SECONDS + '; path=/; SameSite=Lax' +
      (domain ? '; domain=' + domain : '') + (window.location.protocol === 'https:' ? '; Secure' : '');
  }

  /**
   * The widest domain the browser lets this page set a cookie on (shop.example for
   * www.shop.example, never a public suffix), so that the shop's subdomains share one visitor;
   * '' when it takes none (an IP address, localhost, cookies blocked): a cookie of this host alone.
   */
  function findCookieDomain(host) {
    if (host.indexOf('.') < 0 || /^[\d.]+$|:/.test(host)) return '';
    var labels = host.split('.');
    for (var i = labels.length - 2; i >= 0; i--) {
      var domain = labels.slice(i).join('.');
      document.cookie = COOKIE + '_probe=1; path=/; SameSite=Lax; domain=' + domain;
      if (document.cookie.indexOf(COOKIE + '_probe=1') >= 0) {
        document.cookie = COOKIE + '_probe=; max-age=0; path=/; domain=' + domain;
        return domain;
      }
    }
    return '';
  }

  function storage() {
    try {
      return window.localStorage;
    } catch (error) {
      return null; // blocked by the browser's settings
    }
  }

  var cookieDomain = findCookieDomain(window.location.hostname);
  var siteDomain = cookieDomain || window.location.hostname;
  var state = parseState(readCookie()) || parseState(storage() && storage().getItem(COOKIE)) || { visitorId: null, visit: null };
  if (!state.visitorId) state.visitorId = uuid(window.crypto);
  var lastPageUrl = null;

  function save() {
    var value = formatState(state);
    writeCookie(value, cookieDomain);
    try {
      storage().setItem(COOKIE, value);
    } catch (error) {
      // no storage: the cookie alone keeps the state
    }
  }

  /**
   * One request per event: a beacon holds a few hundred bytes, and one event the collector
   * refuses (a URL over its 4,096 characters) takes no other with it.
   */
  function send(event) {
    var body = JSON.stringify({ client_id: clientId, events: [event] });
    var beaconed = false;
    try {
      beaconed = window.navigator.sendBeacon(collector, body);
    } catch (error) {
      // no beacon in this browser
    }
    if (!beaconed && window.fetch) {
      window.fetch(collector, { method: 'POST', body: body, keepalive: true, mode: 'no-cors', credentials: 'omit',
        headers: { 'Content-Type': 'text/plain' } }).catch(function () {});
    }
  }

  /** The event of a call, if it makes one: a page view only when it starts a visit. */
  function callEvent(type, properties) {
    var url = window.location.href.split('#')[0];
    // Within one document (a single-page shop), the referrer of a later view is the previous page.
    var page = { eventId: uuid(window.crypto), now: Date.now(), visitorId: state.visitorId, url: url,
      referrer: lastPageUrl === null ? document.referrer : lastPageUrl };
    if (type === 'page') {
      lastPageUrl = url;
      var next = pageView(state.visit, { eventId: page.eventId, now: page.now, url: url, referrer: page.referrer, siteDomain: siteDomain });
      state.visit = next.visit;
      save();
      return next.starts ? eventOf('page', properties, page) : null;
    }
    var event = eventOf(type, properties, page);
    if (event && type === 'identify') {
      // A customer is linked once per visit, not on every page that calls identify.
      var customer = digest(event.customer_id);
      if (state.visit.identified === customer) return null;
      state.visit.identified = customer;
      save();
    }
    return event;
  }

  function tributary(type, properties) {
    try {
      var event = callEvent(type, properties);
      if (event) send(event);
    } catch (error) {
      // the pixel never breaks the shop's page
    }
  }

  window.tributary = tributary;
  tributary.loaded = true;
  tributary('page');
  (queued || []).forEach(function (call) {
    tributary(call[0], call[1]);
  });
})(window, window.__tributaryTest);
