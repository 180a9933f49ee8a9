-- A dashboard opens on the last 30 days of one model, window and mode, and computing a month's
-- kept daily totals took 8 s at the attribution benchmark's scale: a shop's first view, and each
-- model it tried, waited that long. The keeper now keeps the days of the dashboard's window and
-- mode ahead, every model, for the last days of each client that has data (src/exports/keeper.ts),
-- once a day. This is the local date of the client's zone on which that was last done: a client
-- whose date has moved on is due again (its new day, and any day a change dropped since).

ALTER TABLE attribution_totals_kept ADD COLUMN kept_ahead_on date;
