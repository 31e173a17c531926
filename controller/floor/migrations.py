"""The floor's schema migrations: each version's SQL, in order (docs/floor.md "Schema").

A migration, once released, is never edited: its text here is what every floor database already ran (a
test checks the recorded versions match this list). Applying them, the roles and their grants are
controller/floor/schema.py's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


# The meters views by table, pit and game as migrations 3 and 11 create them (11 recreates them unchanged
# after dropping what they stood on): one text, so the two cannot differ.
_METERS_VIEWS = """CREATE VIEW floor_meters_by_table AS
    SELECT table_id AS key, pit, game, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           count(*) FILTER (WHERE status = 'dead') AS rounds_dead,
           count(*) FILTER (WHERE status = 'void') AS rounds_voided,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents,
           sum(theoretical_win_cents)::bigint AS theoretical_win_cents
    FROM floor_round_meters GROUP BY table_id, pit, game;
CREATE VIEW floor_meters_by_pit AS
    SELECT pit AS key, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents,
           sum(theoretical_win_cents)::bigint AS theoretical_win_cents
    FROM floor_round_meters GROUP BY pit;
CREATE VIEW floor_meters_by_game AS
    SELECT game AS key, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents,
           sum(theoretical_win_cents)::bigint AS theoretical_win_cents
    FROM floor_round_meters GROUP BY game;
"""


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "entries, chain heads, rounds, alerts, quarantine",
        """
CREATE TABLE floor_tables (
    table_id text PRIMARY KEY,
    site text NOT NULL DEFAULT '',
    pit text NOT NULL DEFAULT '',
    game text NOT NULL DEFAULT '',
    last_seq bigint NOT NULL DEFAULT 0,
    last_hash text NOT NULL DEFAULT repeat('0', 64),
    quarantined_at_seq bigint,          -- the entry after which nothing of this table is projected
    quarantine_reason text,
    phase text NOT NULL DEFAULT 'idle',
    held boolean NOT NULL DEFAULT false,
    table_open boolean,
    last_round_id text,
    open_alerts integer NOT NULL DEFAULT 0,
    meters jsonb NOT NULL DEFAULT '{}',
    last_entry_utc timestamptz,
    updated_utc timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE floor_entries (
    table_id text NOT NULL,
    seq bigint NOT NULL CHECK (seq > 0),
    time_utc timestamptz NOT NULL,
    time_text text NOT NULL,               -- as the table wrote it (the hash covers this text)
    round_id text,
    source text NOT NULL,
    kind text NOT NULL,
    version integer NOT NULL,
    payload jsonb NOT NULL,                 -- the public part
    private_digest text,
    prev_hash text NOT NULL,
    hash text NOT NULL,
    stream_seq bigint NOT NULL,
    floor_committed_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (table_id, seq)
);
CREATE INDEX floor_entries_by_round ON floor_entries (table_id, round_id) WHERE round_id IS NOT NULL;
CREATE INDEX floor_entries_by_time ON floor_entries (time_utc);
CREATE TABLE floor_private (
    table_id text NOT NULL,
    seq bigint NOT NULL,
    private_text text NOT NULL,             -- salted: sha256(private_text) = the entry's private_digest
    stream_seq bigint NOT NULL,
    floor_committed_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (table_id, seq),
    FOREIGN KEY (table_id, seq) REFERENCES floor_entries (table_id, seq)
);
CREATE FUNCTION floor_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP; END $$;
CREATE TRIGGER floor_entries_append_only BEFORE UPDATE OR DELETE ON floor_entries
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
CREATE TRIGGER floor_private_append_only BEFORE UPDATE OR DELETE ON floor_private
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
CREATE TABLE floor_rounds (
    table_id text NOT NULL,
    round_id text NOT NULL,
    game text NOT NULL DEFAULT '',
    started_seq bigint,
    started_utc timestamptz,
    status text NOT NULL DEFAULT 'in_progress',   -- settled | dead | void
    closed_seq bigint,
    closed_utc timestamptz,
    settlement jsonb,                              -- the public settlement (no hands)
    handle_cents bigint NOT NULL DEFAULT 0,
    house_win_cents bigint NOT NULL DEFAULT 0,    -- house-banked: minus the players' net; plus rake
    rake_cents bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (table_id, round_id)
);
CREATE INDEX floor_rounds_by_time ON floor_rounds (closed_utc);
CREATE TABLE floor_alerts (
    alert_id bigserial PRIMARY KEY,
    raised_utc timestamptz NOT NULL DEFAULT now(),
    table_id text NOT NULL,
    seq bigint,                                   -- the entry it names (or null)
    stream_seq bigint,                            -- the message it is about (or null)
    origin text NOT NULL,                         -- floor: the floor found it; table: a table's fault
    kind text NOT NULL,
    severity text NOT NULL DEFAULT 'alert',
    message text NOT NULL,
    fault_id text,
    acknowledged_by text,
    acknowledged_utc timestamptz,
    cleared_utc timestamptz
);
CREATE UNIQUE INDEX floor_alerts_once_per_message ON floor_alerts (stream_seq) WHERE stream_seq IS NOT NULL;
CREATE UNIQUE INDEX floor_alerts_table_fault ON floor_alerts (table_id, fault_id) WHERE fault_id IS NOT NULL;
CREATE TABLE floor_quarantine (
    stream_seq bigint PRIMARY KEY,
    received_utc timestamptz NOT NULL DEFAULT now(),
    subject text NOT NULL,
    table_id text NOT NULL,
    msg_id text,
    reason text NOT NULL,
    body bytea NOT NULL
);
CREATE TABLE floor_table_config (
    table_id text PRIMARY KEY,
    pit text NOT NULL DEFAULT '',
    label text NOT NULL DEFAULT ''
);
""",
    ),
    Migration(
        2,
        "reporting views: meters by table, pit, game and shift",
        """
-- Shifts (UTC, docs/floor.md): day 06-14, swing 14-22, grave 22-06 (a grave shift belongs to the day
-- it started).
CREATE FUNCTION floor_shift(moment timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN extract(hour FROM moment AT TIME ZONE 'UTC') >= 22
            THEN to_char(moment AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' grave'
        WHEN extract(hour FROM moment AT TIME ZONE 'UTC') < 6
            THEN to_char((moment AT TIME ZONE 'UTC') - interval '1 day', 'YYYY-MM-DD') || ' grave'
        WHEN extract(hour FROM moment AT TIME ZONE 'UTC') < 14
            THEN to_char(moment AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' day'
        ELSE to_char(moment AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' swing'
    END $$;
CREATE VIEW floor_round_meters AS
    SELECT r.table_id, COALESCE(c.pit, t.pit, '') AS pit, r.game, floor_shift(r.closed_utc) AS shift,
           r.round_id, r.status, r.closed_utc, r.handle_cents, r.house_win_cents, r.rake_cents
    FROM floor_rounds r
    LEFT JOIN floor_tables t USING (table_id)
    LEFT JOIN floor_table_config c USING (table_id)
    WHERE r.status <> 'in_progress';
CREATE VIEW floor_meters_by_table AS
    SELECT table_id, pit, game, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           count(*) FILTER (WHERE status = 'dead') AS rounds_dead,
           count(*) FILTER (WHERE status = 'void') AS rounds_voided,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents
    FROM floor_round_meters GROUP BY table_id, pit, game;
CREATE VIEW floor_meters_by_pit AS
    SELECT pit, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents
    FROM floor_round_meters GROUP BY pit;
CREATE VIEW floor_meters_by_game AS
    SELECT game, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents
    FROM floor_round_meters GROUP BY game;
CREATE VIEW floor_meters_by_shift AS
    SELECT shift, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents
    FROM floor_round_meters GROUP BY shift;
""",
    ),
    Migration(
        3,
        "theoretical win per round (the par sheet's), in the meters views",
        """
ALTER TABLE floor_rounds ADD COLUMN theoretical_win_cents bigint NOT NULL DEFAULT 0;
DROP VIEW floor_meters_by_table, floor_meters_by_pit, floor_meters_by_game, floor_meters_by_shift;
DROP VIEW floor_round_meters;
CREATE VIEW floor_round_meters AS
    SELECT r.table_id, COALESCE(c.pit, t.pit, '') AS pit, r.game, floor_shift(r.closed_utc) AS shift,
           r.round_id, r.status, r.closed_utc, r.handle_cents, r.house_win_cents, r.rake_cents,
           r.theoretical_win_cents
    FROM floor_rounds r
    LEFT JOIN floor_tables t USING (table_id)
    LEFT JOIN floor_table_config c USING (table_id)
    WHERE r.status <> 'in_progress';
"""
        + _METERS_VIEWS
        + """CREATE VIEW floor_meters_by_shift AS
    SELECT shift AS key, count(*) FILTER (WHERE status = 'settled') AS rounds_settled,
           sum(handle_cents)::bigint AS handle_cents, sum(house_win_cents)::bigint AS house_win_cents,
           sum(theoretical_win_cents)::bigint AS theoretical_win_cents
    FROM floor_round_meters GROUP BY shift;
""",
    ),
    Migration(
        4,
        "releases of quarantined tables: who, when, why; applied once by the floor service",
        """
-- docs/floor.md "Releasing a quarantined table". Append-only, like the record: a release is never
-- edited or withdrawn (a wrong one is answered by the next quarantine, not by rewriting this one).
CREATE TABLE floor_releases (
    release_id bigserial PRIMARY KEY,
    released_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    table_id text NOT NULL,
    quarantined_at_seq bigint NOT NULL,     -- the quarantine released: the table's last good entry
    quarantine_reason text,
    released_by text NOT NULL CHECK (btrim(released_by) <> ''),  -- the manager (panel login or --by)
    reason text NOT NULL CHECK (btrim(reason) <> ''),            -- why, in the manager's words
    via text NOT NULL CHECK (via IN ('cli', 'panel')),
    db_user text NOT NULL DEFAULT current_user,
    subject text NOT NULL,                  -- the table's subject in the stream
    after_stream_seq bigint NOT NULL,       -- the replay reads the stream after this (the last good entry)
    set_aside bigint[] NOT NULL,            -- stream seqs never projected (kept in floor_quarantine)
    verified_through_seq bigint NOT NULL    -- the chain verified through this entry at the release
);
CREATE INDEX floor_releases_by_table ON floor_releases (table_id);
CREATE TABLE floor_release_applied (
    release_id bigint PRIMARY KEY REFERENCES floor_releases (release_id),
    applied_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    outcome text NOT NULL CHECK (outcome IN ('projected', 'stale')),
    messages_read bigint NOT NULL DEFAULT 0  -- read again from the stream by the replay
);
CREATE TRIGGER floor_releases_append_only BEFORE UPDATE OR DELETE ON floor_releases
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
CREATE TRIGGER floor_release_applied_append_only BEFORE UPDATE OR DELETE ON floor_release_applied
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
""",
    ),
    Migration(
        5,
        "private parts shown to readers only while the table's gate shows them (issue 22)",
        """
-- docs/floor.md "Private parts". floor_private keeps every private part the floor took (append-only,
-- verified against its commitment); readers (the reporting role, the floor panel, floor verify) read
-- floor_private_shown, which holds a part only while the table's own gate (TableState.private_visible)
-- would show it: never a dead round's, never one about a dead seat (its position, a first position, a
-- refused decision's seat); never a fault's or a dead hand's private words in a round with a dead seat
-- (the shoe's words need not name the position they are about: "jam: card 4d at seat 1"); and of a
-- voided round only if the round reached its reveal before the void, or a community card (position 15)
-- taken before the void (a Chase street's cards, turned in front of everyone). So a part an older
-- uplink released when a void ended the round (the old gate counted the round's end as its reveal) is
-- held, but no longer shown.
CREATE VIEW floor_private_shown AS
    SELECT p.table_id, p.seq, p.private_text, p.stream_seq, p.floor_committed_utc
    FROM floor_private p
    JOIN floor_entries e USING (table_id, seq)
    JOIN floor_rounds r ON r.table_id = e.table_id AND r.round_id = e.round_id
    WHERE r.status <> 'dead'
      AND NOT EXISTS (
          SELECT 1 FROM floor_entries d
          WHERE d.table_id = e.table_id AND d.round_id = e.round_id AND d.kind = 'dead_hand'
            AND d.payload->>'seat' IN (
                e.payload->>'seat',
                substring(p.private_text from '"position":([0-9]+)'),
                substring(p.private_text from '"first_position":([0-9]+)')))
      AND NOT (
          e.kind IN ('fault_raised', 'dead_hand')
          AND EXISTS (
              SELECT 1 FROM floor_entries k
              WHERE k.table_id = e.table_id AND k.round_id = e.round_id AND k.kind = 'dead_hand'
                AND k.payload->>'seat' IS NOT NULL))
      AND (r.status <> 'void'
           OR EXISTS (
               SELECT 1 FROM floor_entries v
               WHERE v.table_id = e.table_id AND v.round_id = e.round_id AND v.kind = 'state_changed'
                 AND v.payload->>'to' = 'reveal')
           OR (e.kind = 'card_dealt'
               AND substring(p.private_text from '"position":([0-9]+)') = '15'
               AND p.stream_seq < (
                   SELECT c.stream_seq FROM floor_entries c
                   WHERE c.table_id = r.table_id AND c.seq = r.closed_seq)));
""",
    ),
    Migration(
        6,
        "surveillance events' marks; the auditor's disclosures of withheld private parts",
        """
-- docs/floor.md "Surveillance": per table, the last entry whose surveillance events the stream
-- SURVEILLANCE acknowledged (the floor service's publisher moves it after the acks).
CREATE TABLE floor_surveillance_marks (
    table_id text PRIMARY KEY,
    last_seq bigint NOT NULL,
    events_published bigint NOT NULL DEFAULT 0,
    updated_utc timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- docs/floor.md "The auditor": every time an auditor was shown the private parts of a dead or voided
-- round (which floor_private_shown withholds): who, when, which round, why. Append-only.
CREATE TABLE floor_private_disclosures (
    disclosure_id bigserial PRIMARY KEY,
    disclosed_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    table_id text NOT NULL,
    round_id text NOT NULL,
    round_status text NOT NULL,
    disclosed_to text NOT NULL CHECK (btrim(disclosed_to) <> ''),   -- the auditor's panel login
    role text NOT NULL,
    reason text NOT NULL CHECK (btrim(reason) <> ''),               -- in the auditor's words
    parts integer NOT NULL,                                         -- private parts shown
    db_user text NOT NULL DEFAULT current_user
);
CREATE INDEX floor_private_disclosures_by_round ON floor_private_disclosures (table_id, round_id);
CREATE TRIGGER floor_private_disclosures_append_only BEFORE UPDATE OR DELETE ON floor_private_disclosures
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
""",
    ),
    Migration(
        7,
        "seeded software verification of the tables: each request and its outcome (issue 26)",
        """
CREATE TABLE floor_software_checks (
    check_id bigserial PRIMARY KEY,
    table_id text NOT NULL,
    requested_utc timestamptz NOT NULL DEFAULT now(),
    requested_by text NOT NULL,
    seed text NOT NULL,                          -- the floor's, hex: fresh for every request
    approved_release text NOT NULL,              -- the release the floor holds (its manifest's name)
    approved_digest text NOT NULL,               -- that manifest's digest
    expected text NOT NULL,                      -- the aggregate computed from the approved files
    answered text,                               -- the table's aggregate; null: no answer
    table_release_digest text,                   -- the release the table verified at its start
    outcome text NOT NULL CHECK (outcome IN ('match', 'mismatch', 'no_answer')),
    detail text NOT NULL DEFAULT ''
);
CREATE INDEX floor_software_checks_by_table ON floor_software_checks (table_id, check_id);
-- The floor map's "which release does each table run": the last software_verified, without a walk back
-- through every entry of a busy table.
CREATE INDEX floor_entries_software ON floor_entries (table_id, seq) WHERE kind = 'software_verified';
CREATE TRIGGER floor_software_checks_append_only BEFORE UPDATE OR DELETE ON floor_software_checks
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
""",
    ),
    Migration(
        8,
        "linked progressive: the link's meter events, contribution marks, refused claims (issue 23)",
        """
-- docs/floor.md "Linked progressive". The floor runs one meter per link (controller/floor/progressive.py)
-- with this as its store: every event of the meter (the progressive's typed entries, as the table's
-- journal would hold them stand-alone) in the order the controller recorded it; append-only. The
-- unique indexes are the promises: a round contributes once, an award is recorded once and paid once.
CREATE TABLE floor_progressive_links (
    link_id text PRIMARY KEY,
    meter_id text NOT NULL,
    tables text[] NOT NULL DEFAULT '{}',
    events bigint NOT NULL DEFAULT 0,            -- how many events the meter holds (the last event_no)
    meter_cents bigint NOT NULL DEFAULT 0,       -- the display meter after the last event
    reserve_cents bigint NOT NULL DEFAULT 0,
    pending_awards integer NOT NULL DEFAULT 0,   -- awards recorded and not yet paid
    state jsonb NOT NULL DEFAULT '{}',           -- every 1.39A meter (MeterState.to_json)
    updated_utc timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE floor_progressive_events (
    link_id text NOT NULL REFERENCES floor_progressive_links (link_id),
    event_no bigint NOT NULL CHECK (event_no > 0),  -- the controller's order (1, 2, ...)
    kind text NOT NULL,                             -- the entry's kind: progressive_contribution, ...
    table_id text,
    round_id text,
    award_id text,
    claim_number integer,                           -- an award's place in the order of claims
    amount_cents bigint,                            -- an award's amount, a reset's, a reserve movement's
    entry jsonb NOT NULL,                           -- the typed entry (controller/journal/entries.py)
    committed_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (link_id, event_no)
);
CREATE UNIQUE INDEX floor_progressive_contribution_once
    ON floor_progressive_events (link_id, table_id, round_id)
    WHERE kind = 'progressive_contribution';
CREATE UNIQUE INDEX floor_progressive_award_claimed_once ON floor_progressive_events (link_id, award_id)
    WHERE kind = 'progressive_award_claimed';
CREATE UNIQUE INDEX floor_progressive_award_paid_once ON floor_progressive_events (link_id, award_id)
    WHERE kind = 'progressive_award_paid';
CREATE INDEX floor_progressive_events_by_table ON floor_progressive_events (link_id, table_id, round_id);
CREATE TRIGGER floor_progressive_events_append_only BEFORE UPDATE OR DELETE ON floor_progressive_events
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
-- Where the contribution path has read each table's entries on the floor to (its round_settled entries
-- after this seq are not yet counted).
CREATE TABLE floor_progressive_marks (
    link_id text NOT NULL REFERENCES floor_progressive_links (link_id),
    table_id text NOT NULL,
    through_seq bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (link_id, table_id)
);
-- Every claim the controller refused (a round it saw no contribution for, a table not on the link...),
-- with the request as it came. Append-only.
CREATE TABLE floor_progressive_refusals (
    refusal_id bigserial PRIMARY KEY,
    refused_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    link_id text NOT NULL,
    table_id text NOT NULL,
    round_id text,
    reason text NOT NULL,
    request text NOT NULL
);
CREATE TRIGGER floor_progressive_refusals_append_only BEFORE UPDATE OR DELETE ON floor_progressive_refusals
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
-- Every award with its state: the winning table, seat and round, the order recorded, paid or pending.
CREATE VIEW floor_progressive_awards AS
    SELECT c.link_id, c.claim_number, c.award_id, c.table_id, c.round_id,
           (c.entry->>'seat')::integer AS seat, (c.entry->>'line')::integer AS line,
           c.amount_cents, c.entry->>'paid_from' AS paid_from,
           (c.entry->>'needs_confirmation')::boolean AS needs_confirmation,
           (c.entry->>'meter_before_cents')::bigint AS meter_before_cents,
           (c.entry->>'meter_after_cents')::bigint AS meter_after_cents,
           c.event_no AS claimed_event_no, c.committed_utc AS claimed_utc,
           p.event_no AS paid_event_no, p.committed_utc AS paid_utc, p.entry->>'by' AS paid_by,
           CASE WHEN p.event_no IS NULL THEN 'pending' ELSE 'paid' END AS status
    FROM floor_progressive_events c
    LEFT JOIN floor_progressive_events p
        ON p.link_id = c.link_id AND p.award_id = c.award_id AND p.kind = 'progressive_award_paid'
    WHERE c.kind = 'progressive_award_claimed';
-- The in-meter by table and shift (the reconciliation against the tables' journals).
CREATE VIEW floor_progressive_contributions AS
    SELECT link_id, table_id, floor_shift(committed_utc) AS shift, count(*) AS rounds,
           sum((entry->>'wagers')::bigint)::bigint AS wagers,
           sum((entry->>'in_meter_cents')::bigint)::bigint AS in_meter_cents,
           sum((entry->>'to_meter_cents')::bigint)::bigint AS to_meter_cents,
           sum((entry->>'hidden_cents')::bigint)::bigint AS hidden_cents
    FROM floor_progressive_events WHERE kind = 'progressive_contribution'
    GROUP BY link_id, table_id, floor_shift(committed_utc);
""",
    ),
    Migration(
        9,
        "surveillance events of the floor's own alerts: one mark per alert published (issue 26)",
        """
-- docs/floor.md "Surveillance": each alert the floor raised itself (floor_alerts, origin 'floor') whose
-- surveillance event the stream SURVEILLANCE acknowledged. One row per alert, not a high-water mark:
-- alert ids come from a sequence before their transactions commit, so they become visible out of order.
CREATE TABLE floor_surveillance_alert_marks (
    alert_id bigint PRIMARY KEY,
    published_utc timestamptz NOT NULL DEFAULT clock_timestamp()
);
""",
    ),
    Migration(
        10,
        "partitioned floor workers: each partition's lease epoch (the fencing token) and the NATS nodes seen",
        """
-- docs/floor.md "Partitioned floor workers": one row per partition, its newest lease. A worker that takes a
-- partition's lease (a JetStream KV key, its revision the epoch) raises the epoch here first; each of its
-- commits then locks the row (SELECT ... FOR UPDATE) and refuses itself unless the epoch is still its
-- own, so a worker that lost its lease never commits, however late it wakes.
CREATE TABLE floor_partition_leases (
    partition integer PRIMARY KEY CHECK (partition >= 0),
    partitions integer NOT NULL CHECK (partitions > partition),
    epoch bigint NOT NULL CHECK (epoch > 0),
    worker text NOT NULL,
    acquired_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    renewed_utc timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- The JetStream cluster's nodes as the workers last saw them (the stream's leader and replicas), for
-- the floor panel, which reads PostgreSQL only.
CREATE TABLE floor_nats_nodes (
    node text PRIMARY KEY,
    role text NOT NULL,            -- 'leader' or 'replica'
    current boolean NOT NULL,      -- caught up with the leader
    offline boolean NOT NULL,
    lag bigint NOT NULL DEFAULT 0, -- operations behind the leader
    seen_by text NOT NULL,
    seen_utc timestamptz NOT NULL DEFAULT clock_timestamp()
);
""",
    ),
    Migration(
        11,
        "the property's shifts: no second definition in SQL (floor_shift and the views by shift dropped)",
        """
-- Shifts are the property's, in its time zone ([property], controller/locale.py): the panel and the
-- progressive reconciliation compute their bounds in Python and give them to each query as parameters
-- (docs/floor.md "Schema"). floor_shift's fixed UTC shifts would be a second definition: dropped, with
-- the views that used it (floor_round_meters and the meters views are recreated without it).
DROP VIEW floor_meters_by_table, floor_meters_by_pit, floor_meters_by_game, floor_meters_by_shift;
DROP VIEW floor_progressive_contributions;
DROP VIEW floor_round_meters;
DROP FUNCTION floor_shift(timestamptz);
CREATE VIEW floor_round_meters AS
    SELECT r.table_id, COALESCE(c.pit, t.pit, '') AS pit, r.game, r.round_id, r.status, r.closed_utc,
           r.handle_cents, r.house_win_cents, r.rake_cents, r.theoretical_win_cents
    FROM floor_rounds r
    LEFT JOIN floor_tables t USING (table_id)
    LEFT JOIN floor_table_config c USING (table_id)
    WHERE r.status <> 'in_progress';
"""
        + _METERS_VIEWS
        + """-- The in-meter by table (by shift: the progressive page, its bounds given by the panel).
CREATE VIEW floor_progressive_contributions AS
    SELECT link_id, table_id, count(*) AS rounds,
           sum((entry->>'wagers')::bigint)::bigint AS wagers,
           sum((entry->>'in_meter_cents')::bigint)::bigint AS in_meter_cents,
           sum((entry->>'to_meter_cents')::bigint)::bigint AS to_meter_cents,
           sum((entry->>'hidden_cents')::bigint)::bigint AS hidden_cents
    FROM floor_progressive_events WHERE kind = 'progressive_contribution'
    GROUP BY link_id, table_id;
""",
    ),
    Migration(
        12,
        "typed columns of the entries for the floor's readers (seat, state entered, release)",
        """
-- docs/floor.md "Schema": what the floor's readers need of an entry, in typed columns the floor service
-- writes at commit from the typed entry (controller/floor/store.py ``entry_columns``): its own seat, the
-- state a state_changed entered, the release a software_verified names. floor_private_shown and the
-- floor map read these, no payload's JSON.
ALTER TABLE floor_entries
    ADD COLUMN seat integer,
    ADD COLUMN state_to text,
    ADD COLUMN software_release text,
    ADD COLUMN software_release_digest text,
    ADD COLUMN software_development boolean,
    -- Written by this release's COPY on every row (1), never by a previous release's floor service left
    -- running after init-db: its COPY names only the old columns, and with no default this refuses it
    -- (its batch NAKed, retried by this release's service) rather than storing a row with its typed
    -- columns NULL (a killed seat's private part shown, a progressive contribution lost).
    ADD COLUMN typed_columns smallint NOT NULL DEFAULT 0;
ALTER TABLE floor_entries ALTER COLUMN typed_columns DROP DEFAULT;
-- The rows written before this migration, backfilled once from their payloads: the one place that reads
-- an entry's raw JSON (the same fields the typed classes declare; a payload holds nothing else, the
-- classes forbid unknown fields). floor_entries refuses UPDATE by trigger: off for these statements
-- only, inside the migration's one transaction (under its lock, nobody else sees it off).
ALTER TABLE floor_entries DISABLE TRIGGER floor_entries_append_only;
-- A seat only of up to 9 digits (store.py ``entry_columns`` keeps the same): a previous release's wire did
-- not bound it, and one past integer would fail this cast, and init-db with it; else NULL.
UPDATE floor_entries SET seat = (payload->>'seat')::integer
    WHERE jsonb_typeof(payload->'seat') = 'number' AND (payload->>'seat') ~ '^-?[0-9]{1,9}$';
UPDATE floor_entries SET state_to = payload->>'to' WHERE kind = 'state_changed';
UPDATE floor_entries SET software_release = payload->>'release',
       software_release_digest = payload->>'release_digest',
       software_development = (payload->>'development')::boolean
    WHERE kind = 'software_verified';
ALTER TABLE floor_entries ENABLE TRIGGER floor_entries_append_only;
-- The view of migration 5 on the typed columns: the same rows (a seat compared as the text the payload
-- held, against the private part's position read from its text as before).
CREATE OR REPLACE VIEW floor_private_shown AS
    SELECT p.table_id, p.seq, p.private_text, p.stream_seq, p.floor_committed_utc
    FROM floor_private p
    JOIN floor_entries e USING (table_id, seq)
    JOIN floor_rounds r ON r.table_id = e.table_id AND r.round_id = e.round_id
    WHERE r.status <> 'dead'
      AND NOT EXISTS (
          SELECT 1 FROM floor_entries d
          WHERE d.table_id = e.table_id AND d.round_id = e.round_id AND d.kind = 'dead_hand'
            AND d.seat::text IN (
                e.seat::text,
                substring(p.private_text from '"position":([0-9]+)'),
                substring(p.private_text from '"first_position":([0-9]+)')))
      AND NOT (
          e.kind IN ('fault_raised', 'dead_hand')
          AND EXISTS (
              SELECT 1 FROM floor_entries k
              WHERE k.table_id = e.table_id AND k.round_id = e.round_id AND k.kind = 'dead_hand'
                AND k.seat IS NOT NULL))
      AND (r.status <> 'void'
           OR EXISTS (
               SELECT 1 FROM floor_entries v
               WHERE v.table_id = e.table_id AND v.round_id = e.round_id AND v.kind = 'state_changed'
                 AND v.state_to = 'reveal')
           OR (e.kind = 'card_dealt'
               AND substring(p.private_text from '"position":([0-9]+)') = '15'
               AND p.stream_seq < (
                   SELECT c.stream_seq FROM floor_entries c
                   WHERE c.table_id = r.table_id AND c.seq = r.closed_seq)));
""",
    ),
    Migration(
        13,
        "partitioned floor workers: the partition hash each lease was claimed under",
        """
-- docs/floor.md "Partitioned floor workers": the scheme a lease's partitions follow: its count
-- (``partitions``) and its hash (``partition_hash``: 'fnv1a-32', nats-server's partition()), recorded
-- with the epoch it was claimed at (``partition_hash_epoch``). A worker of an earlier release (CRC-32,
-- or FNV-1a before this record) claims a lease without touching these, so a row whose
-- partition_hash_epoch is not its epoch has an unknown hash; rows from before this migration too.
ALTER TABLE floor_partition_leases ADD COLUMN partition_hash text, ADD COLUMN partition_hash_epoch bigint;
""",
    ),
    Migration(
        14,
        "typed columns for the floor's last readers of JSON: a clock measurement, a settlement's "
        "progressive part, the progressive's events",
        """
-- docs/floor.md "Schema": the rest of what the floor's readers need, in typed columns written at commit
-- from the typed classes: a clock_offset's measurement (the floor map's clock), a round_settled's
-- progressive part (the link's contribution path: RoundSettled.settled_progressive, controller/floor/
-- store.py ``entry_columns``) and the fields of the progressive's events (controller/floor/progressive.py
-- ``_columns``, from the controller's typed entries), which its views and pages read.
ALTER TABLE floor_entries
    ADD COLUMN clock_offset_us bigint,
    ADD COLUMN clock_within_bound boolean,
    ADD COLUMN clock_bound_us bigint,
    ADD COLUMN progressive_settled boolean,
    ADD COLUMN progressive_wagers bigint,
    ADD COLUMN progressive_unit_cents bigint;
ALTER TABLE floor_progressive_events
    ADD COLUMN seat integer,
    ADD COLUMN line integer,
    ADD COLUMN wagers bigint,
    ADD COLUMN in_meter_cents bigint,
    ADD COLUMN to_meter_cents bigint,
    ADD COLUMN hidden_cents bigint,
    ADD COLUMN overflow_cents bigint,
    ADD COLUMN paid_from text,
    ADD COLUMN needs_confirmation boolean,
    ADD COLUMN meter_before_cents bigint,
    ADD COLUMN meter_after_cents bigint,
    ADD COLUMN reserve_after_cents bigint,
    ADD COLUMN by text,
    ADD COLUMN reason text,
    ADD COLUMN parameters_before jsonb,
    ADD COLUMN parameters_after jsonb,
    -- As floor_entries.typed_columns (migration 12): written by this release's INSERT (1), so a previous
    -- release's link left running after init-db is refused, never storing an event with them NULL.
    ADD COLUMN typed_columns smallint NOT NULL DEFAULT 0;
ALTER TABLE floor_progressive_events ALTER COLUMN typed_columns DROP DEFAULT;
-- The rows written before this migration, backfilled once from their JSON: the one place that reads it
-- (the same fields the typed classes declare). Both tables refuse UPDATE by trigger: off for these
-- statements only, inside the migration's one transaction (under its lock, nobody else sees it off).
ALTER TABLE floor_entries DISABLE TRIGGER floor_entries_append_only;
-- A figure past bigint stays NULL, as at commit (the class's int is unbounded).
UPDATE floor_entries SET
    clock_offset_us = CASE WHEN (payload->>'offset_us')::numeric BETWEEN -9223372036854775808
                           AND 9223372036854775807 THEN (payload->>'offset_us')::bigint END,
    clock_within_bound = (payload->>'within_bound')::boolean,
    clock_bound_us = CASE WHEN (payload->>'bound_us')::numeric BETWEEN -9223372036854775808
                          AND 9223372036854775807 THEN (payload->>'bound_us')::bigint END
    WHERE kind = 'clock_offset';
-- A progressive figure is taken only as 1 to 15 digits (RoundSettled.settled_progressive: a whole number
-- up to MAX_PROGRESSIVE_FIGURE; a float's canonical text has a point or an exponent, and jsonb prints a
-- big one's exponent away, hence the bound); anything else stays NULL for the reader to refuse.
UPDATE floor_entries e SET progressive_settled = true,
    progressive_wagers = CASE WHEN jsonb_typeof(x.part->'contributions'->'wagers') = 'number'
        AND (x.part->'contributions'->>'wagers') ~ '^[0-9]{1,15}$'
        THEN (x.part->'contributions'->>'wagers')::bigint END,
    progressive_unit_cents = CASE WHEN jsonb_typeof(x.part->'unit_cents') = 'number'
        AND (x.part->>'unit_cents') ~ '^[0-9]{1,15}$' THEN (x.part->>'unit_cents')::bigint END
    FROM (SELECT table_id, seq, payload->'settlement'->'progressive' AS part FROM floor_entries
          WHERE kind = 'round_settled') x
    WHERE e.table_id = x.table_id AND e.seq = x.seq AND x.part IS NOT NULL AND x.part <> 'null'::jsonb;
ALTER TABLE floor_entries ENABLE TRIGGER floor_entries_append_only;
ALTER TABLE floor_progressive_events DISABLE TRIGGER floor_progressive_events_append_only;
UPDATE floor_progressive_events SET
    seat = (entry->>'seat')::integer, line = (entry->>'line')::integer,
    wagers = (entry->>'wagers')::bigint, in_meter_cents = (entry->>'in_meter_cents')::bigint,
    to_meter_cents = (entry->>'to_meter_cents')::bigint, hidden_cents = (entry->>'hidden_cents')::bigint,
    overflow_cents = (entry->>'overflow_cents')::bigint, paid_from = entry->>'paid_from',
    needs_confirmation = (entry->>'needs_confirmation')::boolean,
    meter_before_cents = (entry->>'meter_before_cents')::bigint,
    meter_after_cents = (entry->>'meter_after_cents')::bigint,
    reserve_after_cents = (entry->>'reserve_after_cents')::bigint,
    by = entry->>'by', reason = entry->>'reason',
    -- A JSON null kept as one (the opening's ``before``), as the typed entry writes it.
    parameters_before = CASE WHEN kind = 'progressive_parameters_changed' THEN entry->'before' END,
    parameters_after = CASE WHEN kind = 'progressive_parameters_changed' THEN entry->'after' END;
ALTER TABLE floor_progressive_events ENABLE TRIGGER floor_progressive_events_append_only;
-- The views of migrations 8 and 11 on the typed columns: the same columns, the same rows.
CREATE OR REPLACE VIEW floor_progressive_awards AS
    SELECT c.link_id, c.claim_number, c.award_id, c.table_id, c.round_id,
           c.seat, c.line, c.amount_cents, c.paid_from, c.needs_confirmation,
           c.meter_before_cents, c.meter_after_cents,
           c.event_no AS claimed_event_no, c.committed_utc AS claimed_utc,
           p.event_no AS paid_event_no, p.committed_utc AS paid_utc, p.by AS paid_by,
           CASE WHEN p.event_no IS NULL THEN 'pending' ELSE 'paid' END AS status
    FROM floor_progressive_events c
    LEFT JOIN floor_progressive_events p
        ON p.link_id = c.link_id AND p.award_id = c.award_id AND p.kind = 'progressive_award_paid'
    WHERE c.kind = 'progressive_award_claimed';
CREATE OR REPLACE VIEW floor_progressive_contributions AS
    SELECT link_id, table_id, count(*) AS rounds,
           sum(wagers)::bigint AS wagers,
           sum(in_meter_cents)::bigint AS in_meter_cents,
           sum(to_meter_cents)::bigint AS to_meter_cents,
           sum(hidden_cents)::bigint AS hidden_cents
    FROM floor_progressive_events WHERE kind = 'progressive_contribution'
    GROUP BY link_id, table_id;
""",
    ),
)
