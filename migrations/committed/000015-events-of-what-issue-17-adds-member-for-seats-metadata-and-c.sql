--! Previous: sha1:f351cf71bd7db79ec183b50b258b3ab10025244b
--! Hash: sha1:e33bc738081d8504f403ce609918af1b9c1aa5fb
--! Message: Events of what issue 17 adds: member.* for seats; metadata (and customers' external_id) in the data of product, customer and order events (issue 17, SPEC §17, §18)

-- Issue 17 (SPEC §17, §18): what issue 17 adds is part of the events. A seat's
-- changes are `member.*` events, readable by whoever reads the organization's
-- customers (the audience `members`); products, customers and orders carry
-- their metadata, and customers their external_id, in `data`, as REST answers
-- them now (test/events.test.ts compares an event's data with the REST answer).
drop trigger if exists _400_events on rowgate.customer_members;
create trigger _400_events after insert or update on rowgate.customer_members for each row
  execute function rowgate_private.tg__events('member', 'members',
    'id,organization_id,customer_id,email,name,role,metadata,created_at,updated_at');
drop trigger if exists _400_events on rowgate.products;
create trigger _400_events after insert or update on rowgate.products for each row
  execute function rowgate_private.tg__events('product', 'members',
    'id,organization_id,name,description,price_amount,price_currency,is_archived,metadata,created_at,updated_at');
drop trigger if exists _400_events on rowgate.customers;
create trigger _400_events after insert or update on rowgate.customers for each row
  execute function rowgate_private.tg__events('customer', 'members',
    'id,organization_id,email,first_name,last_name,status,external_id,metadata,created_at,updated_at');
drop trigger if exists _400_events on rowgate.orders;
create trigger _400_events after insert or update on rowgate.orders for each row
  execute function rowgate_private.tg__events('order', 'members',
    'id,organization_id,customer_id,product_id,amount,currency,status,metadata,created_at,updated_at');
