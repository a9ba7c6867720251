import PostgresNIO

/// The PostgreSQL record's table and its two functions, made or brought up to date on first use
/// (`PostgresMigration`, one instance at a time).
///
/// A claim and a finish each call a PL/pgSQL function rather than sending their statement: a
/// function's statements are parsed and analysed once per database connection, where a statement
/// sent as text is parsed and analysed on every call (about a quarter of PostgreSQL's CPU a
/// notify, docs/operations.md, stop 70). This keeps working behind PgBouncer in transaction mode,
/// which named prepared statements do not. Each function still plans its statement for the
/// call's values (`plan_cache_mode`, set on the function only), as a statement sent as text is
/// planned: one plan for every value cost about twice the CPU.
///
/// The functions' names carry a version: a later Herald that changes what one does adds a new
/// name, so that an older instance beside it in a rolling upgrade keeps calling its own.
enum PostgresRecordSchema {
    /// The advisory lock the record's migration holds.
    static let lock: Int64 = 4_242_004

    static let statements: [PostgresQuery] = [
        """
        CREATE TABLE IF NOT EXISTS herald_deliveries (
            key TEXT PRIMARY KEY, state TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
        """,
        // The trace's columns (docs/operations.md, "Why didn't my phone ring?"), added to a table an
        // earlier version made.
        """
        ALTER TABLE herald_deliveries
            ADD COLUMN IF NOT EXISTS event_id TEXT, ADD COLUMN IF NOT EXISTS app_id TEXT,
            ADD COLUMN IF NOT EXISTS device TEXT, ADD COLUMN IF NOT EXISTS pushkey TEXT,
            ADD COLUMN IF NOT EXISTS reason TEXT, ADD COLUMN IF NOT EXISTS detail TEXT,
            ADD COLUMN IF NOT EXISTS started_at DOUBLE PRECISION, ADD COLUMN IF NOT EXISTS finished_at DOUBLE PRECISION,
            ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS instance TEXT,
            ADD COLUMN IF NOT EXISTS provider_id TEXT, ADD COLUMN IF NOT EXISTS kept_until DOUBLE PRECISION NOT NULL DEFAULT 0,
            ADD COLUMN IF NOT EXISTS target TEXT, ADD COLUMN IF NOT EXISTS front_end TEXT
        """,
        "CREATE INDEX IF NOT EXISTS herald_deliveries_event ON herald_deliveries (event_id)",
        // A device's deliveries across events (`herald trace --pushkey`).
        "CREATE INDEX IF NOT EXISTS herald_deliveries_device ON herald_deliveries (device)",
        claim,
        finish,
    ]

    /// Claims the keys of one statement (`PostgresDeliveryRecords.claim(_:client:takeover:window:)`):
    /// for each key in the order given (`o_n`), whether this call claimed it and the state its row
    /// had before (none, a record, or a claim that ran out: a takeover). The rows are inserted in
    /// the order of their keys, so that two instances' calls lock rows in the same order.
    static let claim: PostgresQuery = """
        CREATE OR REPLACE FUNCTION herald_claim_v1(
            p_keys TEXT[], p_event_ids TEXT[], p_front_ends TEXT[], p_app_ids TEXT[], p_devices TEXT[], p_pushkeys TEXT[],
            p_instances TEXT[], p_ats DOUBLE PRECISION[], p_takeover DOUBLE PRECISION, p_kept DOUBLE PRECISION)
        RETURNS TABLE (o_n BIGINT, o_claimed BOOLEAN, o_state TEXT)
        LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
        BEGIN
            RETURN QUERY
            WITH input AS (
                SELECT * FROM unnest(p_keys, p_event_ids, p_front_ends, p_app_ids, p_devices, p_pushkeys, p_instances, p_ats)
                    WITH ORDINALITY AS i(key, event_id, front_end, app_id, device, pushkey, instance, at, n)
            ),
            before AS (SELECT d.key, d.state FROM herald_deliveries d JOIN input USING (key)),
            claimed AS (
                INSERT INTO herald_deliveries AS d (key, state, expires_at, event_id, front_end, app_id, device, pushkey, started_at,
                    instance, kept_until)
                SELECT input.key, 'claimed', input.at + p_takeover, NULLIF(input.event_id, ''), NULLIF(input.front_end, ''),
                    NULLIF(input.app_id, ''), NULLIF(input.device, ''), NULLIF(input.pushkey, ''), input.at, input.instance,
                    input.at + p_kept
                FROM input ORDER BY input.key
                ON CONFLICT (key) DO UPDATE SET state = 'claimed', expires_at = EXCLUDED.expires_at,
                    event_id = EXCLUDED.event_id, front_end = EXCLUDED.front_end, app_id = EXCLUDED.app_id, device = EXCLUDED.device,
                    pushkey = EXCLUDED.pushkey, started_at = EXCLUDED.started_at, instance = EXCLUDED.instance,
                    kept_until = EXCLUDED.kept_until, reason = NULL, detail = NULL, finished_at = NULL, attempts = 0, provider_id = NULL,
                    target = NULL
                WHERE d.expires_at <= EXCLUDED.started_at
                RETURNING d.key
            )
            SELECT input.n, claimed.key IS NOT NULL, before.state
            FROM input LEFT JOIN claimed USING (key) LEFT JOIN before USING (key)
            ORDER BY input.n;
        END
        $$
        """

    /// Finishes the keys of one statement (`PostgresDeliveryRecords.finish(_:client:window:)`): a
    /// recorded outcome is answered from until the window ends, or, heard, from no longer (its
    /// trace stays); a failure releases its claim at once, its trace kept.
    static let finish: PostgresQuery = """
        CREATE OR REPLACE FUNCTION herald_finish_v1(
            p_keys TEXT[], p_states TEXT[], p_recorded BOOLEAN[], p_reasons TEXT[], p_details TEXT[], p_attempts BIGINT[],
            p_provider_ids TEXT[], p_targets TEXT[], p_heard BOOLEAN[], p_ats DOUBLE PRECISION[], p_window DOUBLE PRECISION)
        RETURNS VOID
        LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
        BEGIN
            WITH input AS (
                SELECT * FROM unnest(p_keys, p_states, p_recorded, p_reasons, p_details, p_attempts, p_provider_ids, p_targets,
                    p_heard, p_ats)
                    AS i(key, state, recorded, reason, detail, attempts, provider_id, target, heard, at)
            ),
            released AS (
                UPDATE herald_deliveries d SET state = i.state, expires_at = 0, reason = NULLIF(i.reason, ''),
                    detail = NULLIF(i.detail, ''), finished_at = i.at, attempts = i.attempts, provider_id = NULLIF(i.provider_id, ''),
                    target = NULLIF(i.target, '')
                FROM input i WHERE d.key = i.key AND NOT i.recorded AND d.state = 'claimed'
                RETURNING 1
            )
            INSERT INTO herald_deliveries AS d (key, state, expires_at, kept_until, reason, detail, finished_at, attempts, provider_id, target)
            SELECT input.key, input.state, CASE WHEN input.heard THEN input.at ELSE input.at + p_window END, input.at + p_window,
                NULLIF(input.reason, ''), NULLIF(input.detail, ''), input.at, input.attempts, NULLIF(input.provider_id, ''),
                NULLIF(input.target, '')
            FROM input WHERE input.recorded ORDER BY input.key
            ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at,
                kept_until = GREATEST(d.kept_until, EXCLUDED.kept_until), reason = EXCLUDED.reason, detail = EXCLUDED.detail,
                finished_at = EXCLUDED.finished_at, attempts = EXCLUDED.attempts, provider_id = EXCLUDED.provider_id,
                target = EXCLUDED.target;
        END
        $$
        """
}
