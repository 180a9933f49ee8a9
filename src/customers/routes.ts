import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidRequest } from '../http/errors.js';
import { ErrorEnvelope, NonEmptyString } from '../http/schemas.js';

export const MAX_CUSTOMERS_PER_ERASURE = 1000;

export const ErasureBody = Type.Object(
  {
    customer_ids: Type.Optional(
      Type.Array(NonEmptyString("The shop's customer id, as in orders and touchpoints."), { maxItems: MAX_CUSTOMERS_PER_ERASURE, uniqueItems: true }),
    ),
    customer_emails: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 320, description: "An e-mail address; matched, in lower case, against orders' customer_email and hashed_customer_email (SHA-256 of the address in lower case)." }), {
        maxItems: MAX_CUSTOMERS_PER_ERASURE,
        uniqueItems: true,
      }),
    ),
  },
  { additionalProperties: false, examples: [{ customer_ids: ['magento_user_42'], customer_emails: ['roni_cost@example.com'] }] },
);

export const ErasureResult = Type.Object(
  {
    message: Type.String(),
    customers: Type.Integer({ description: 'Customers found: those named by id, and those of the orders an e-mail matched.' }),
    orders: Type.Integer({ description: 'Orders changed in this request: every order of the customers found.' }),
    touchpoints: Type.Integer({ description: "Touchpoints changed in this request: the customers', and those of their visitors." }),
    identities: Type.Integer({ description: 'Identity links deleted.' }),
    request_id: Type.String({ format: 'uuid' }),
  },
  {
    // The customer of the Magento order of the examples (src/orders/schema.ts), named both ways: one customer, one order.
    examples: [{ message: 'Erased the personal data of 1 customer', customers: 1, orders: 1, touchpoints: 0, identities: 0, request_id: '11ec48c3-0923-4f22-ad14-5d0885727775' }],
  },
);

/** Customer erasure, for the requests privacy law gives customers. */
export const customerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/erase',
    {
      config: { rateLimit: 'orderWrites' },
      schema: {
        summary: "Erase customers' personal data",
        description:
          'Gives each customer named by id, or by an e-mail of one of their orders, a new customer_id of no meaning (erased:<uuid>) on all its ' +
          'orders and touchpoints. Removes e-mails, phone numbers (and their hashes), names, IP addresses and shipping addresses from their orders; ' +
          "removes every query parameter but UTMs and click ids (and fragments) from their touchpoints' landing_url and referrer; replaces with " +
          '[erased] every tag, code, URL path segment, UTM, click id and derived id that holds one of their identifiers, and deletes such aliases; ' +
          'deletes the identity links of their visitors, whose touchpoints then carry the new customer_id themselves and a new visitor_id ' +
          '(erased:<uuid>). Order ids, times, amounts, currencies, products and refunds stay, and exports give the same figures before and after. ' +
          'All or nothing; sending it again changes nothing.',
        body: ErasureBody,
        response: { 200: ErasureResult, 400: ErrorEnvelope, 401: ErrorEnvelope },
      },
    },
    async (request) => {
      const { customer_ids = [], customer_emails = [] } = request.body;
      if (customer_ids.length + customer_emails.length === 0) {
        throw invalidRequest([{ loc: 'body', msg: 'Give customer_ids or customer_emails, with at least one value', type: 'required' }]);
      }
      const counts = await request.store.erasure.erase(request.tenant, { customerIds: customer_ids, customerEmails: customer_emails }, new Date());
      // Counts only: the ids and e-mails asked about are what the log must not keep.
      request.log.info({ erased: counts }, 'customers erased');
      return { message: `Erased the personal data of ${counts.customers} customer${counts.customers === 1 ? '' : 's'}`, ...counts, request_id: request.id };
    },
  );
};
