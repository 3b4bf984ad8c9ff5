-- A new check is proven on every row while writes wait.
set local lock_timeout = '2s';
alter table rowgate.orders add constraint orders_amount_positive check (amount > 0);
