"""What proportion and capacity share: the queue record (``attrs``), the charging of tasks
to queues (``charging``), the frame both write their rules in (``plugin``: the session, the
six queue hooks' wiring, the closed-queue and admission checks), the spec-derived limits
(``spec``), Volcano's wording of a refusal (``refusals``) and capacity's queue tree
(``hierarchy``). No plugin is registered here."""
