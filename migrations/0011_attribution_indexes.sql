-- An order's attribution path starts from its customer (src/attribution/paths.ts): the
-- touchpoints sent with its customer_id, and those of the visitors linked to it, directly or
-- through one of the customer's orders. Touchpoints and identities have their indexes by
-- customer, visitor and order (0010); orders had none by customer, so finding a customer's
-- orders (for order links, and for whether an order is the customer's first) read every order
-- of the client. This index answers both, the second from the index alone: a customer's orders
-- in purchase order, ties by order_id as "first order" breaks them.

CREATE INDEX orders_by_customer ON orders (client_id, environment, customer_id, time_of_purchase, order_id) WHERE customer_id IS NOT NULL;
