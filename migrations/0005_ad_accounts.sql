-- The ad platforms and accounts each client has sent spend for: the values of the export
-- breakdowns `platform` and `account`, read without scanning the spend tables. Spend upserts add
-- to it; deleting spend leaves it as it is (a value seen once stays listed).

CREATE TABLE ad_accounts (
  client_id           uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment         text NOT NULL CHECK (environment IN ('production', 'uat')),
  platform_name       text COLLATE "C" NOT NULL,
  platform_account_id text COLLATE "C" NOT NULL,
  PRIMARY KEY (client_id, environment, platform_name, platform_account_id)
);

INSERT INTO ad_accounts
SELECT client_id, environment, platform_name, platform_account_id FROM spend_hourly
 UNION
SELECT client_id, environment, platform_name, platform_account_id FROM spend_daily;
