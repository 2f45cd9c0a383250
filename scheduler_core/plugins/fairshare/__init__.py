"""What proportion and capacity share: the queue record (``attrs``), the charging of tasks
to queues (``charging``), the spec-derived limits (``spec``) and capacity's queue tree
(``hierarchy``). No plugin is registered here."""
