-- The browser origins a client's pixel events may come from (POST /v1/collect), such as
-- ["https://shop.example"]. The client id is public (it is in the shop's script tag), so any
-- page could send events in its name; a client that lists its shop's origins has events from
-- other pages dropped. Browsers set Origin themselves, so a page cannot pretend to be the shop
-- (a script outside a browser can: the collector's rate limits bound what it costs).
-- Empty: events are taken from any origin.
ALTER TABLE clients ADD COLUMN collect_origins jsonb NOT NULL DEFAULT '[]';
