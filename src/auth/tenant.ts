/** The two servers: live data, and the acceptance-testing copy whose data is kept apart. */
export type Environment = 'production' | 'uat';

/** Whose data a request may see: one client, in one environment. */
export interface Tenant {
  clientId: string;
  environment: Environment;
  /**
   * The public UAT test credentials: the request is validated and answered as if it were
   * stored, by the stand-in store (src/db/store.ts), and nothing is stored or read.
   */
  dryRun: boolean;
  /** The SHA-256 of the API key used, base64url (not for the test credentials): what write budgets are kept per. */
  apiKeyHash?: string;
}
