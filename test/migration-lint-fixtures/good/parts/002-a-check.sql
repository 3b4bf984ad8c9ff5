-- A check for new rows; a later migration validates it, with no strong lock held.
alter table rowgate.products add constraint products_note_length check (length(note) < 1000) not valid;
