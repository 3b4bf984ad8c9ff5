-- The finding is reported in this part, at its own line.

create index products_note on rowgate.products (note);
