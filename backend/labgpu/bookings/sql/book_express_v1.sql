-- The booking express lane on PostgreSQL: authenticate, check, reserve and audit in one round trip.
--
-- It accepts a booking only when it is certain that `booking_create` (bookings/services.py) would
-- accept the same request, and then writes exactly the rows that service writes (booking, audit
-- event, idempotency key) with the same locks in the same order (pool, then quota rows). Anything
-- else, including every error, a fragmented pool that needs repacking, per-member limits, a quota
-- alert to send and a known Idempotency-Key, answers {"defer": why} without writing: the caller
-- then runs the full service, which alone words errors. Quota is compared with a 0.02 GPU-hour
-- margin, so rounding can only make this lane more careful than the service, never less.
--
-- VOLATILE: under READ COMMITTED every statement below takes a fresh snapshot, so the slot and quota
-- reads after the pool lock see everything committed by whoever held the lock before.
-- Versioned: a change is a new file and a new migration, never an edit of this one.
CREATE OR REPLACE FUNCTION labgpu_book_express(
    p_token_hash text,
    p_pool_id bigint,
    p_lab_id bigint,            -- NULL: the caller's only lab
    p_start timestamptz,
    p_end timestamptz,
    p_on_demand boolean,
    p_purpose text,
    p_now timestamptz,
    p_audit_start text,         -- start and end as the service's audit entry spells them
    p_audit_end text,
    p_idempotency_key text,     -- NULL when the request carries none
    p_fingerprint text
) RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    live CONSTANT text[] := ARRAY['pending', 'scheduled', 'provisioning', 'ready', 'ending'];
    consuming CONSTANT text[] := ARRAY['ending', 'completed'];
    caller record;
    member record;
    pool record;
    quota record;
    lab_count integer;
    instant_s numeric;
    held_from timestamptz;
    held_until timestamptz;
    taken smallint[];
    new_slot integer;
    month_begin timestamptz;
    month_end timestamptz;
    used numeric;
    committed numeric;
    needed numeric;
    after_booking numeric;
    new_status text;
    new_id bigint;
BEGIN
    -- Who: the token must be live, carry `book` (or `admin`), and belong to an active user.
    SELECT t.id AS token_id, t.last_used_at, u.id AS user_id, u.username, u.first_name, u.last_name
      INTO caller
      FROM accounts_apitoken t JOIN accounts_user u ON u.id = t.user_id
     WHERE t.secret_hash = p_token_hash AND t.revoked_at IS NULL
       AND (t.expires_at IS NULL OR t.expires_at > p_now) AND u.is_active
       AND jsonb_typeof(t.scopes) = 'array'
       AND (t.scopes @> '["book"]' OR t.scopes @> '["admin"]');
    IF NOT FOUND THEN RETURN '{"defer": "token"}'; END IF;

    IF p_idempotency_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM bookings_idempotencykey
         WHERE user_id = caller.user_id AND key = p_idempotency_key
    ) THEN
        RETURN '{"defer": "idempotent_replay"}';
    END IF;

    -- For which lab: the one named, else the only one.
    IF p_lab_id IS NULL THEN
        SELECT count(*) INTO lab_count FROM accounts_membership WHERE user_id = caller.user_id;
        IF lab_count <> 1 THEN RETURN '{"defer": "lab"}'; END IF;
    END IF;
    SELECT m.lab_id, m.max_hours_per_week, m.max_concurrent_bookings, l.name, l.slug
      INTO member
      FROM accounts_membership m JOIN accounts_lab l ON l.id = m.lab_id
     WHERE m.user_id = caller.user_id AND (p_lab_id IS NULL OR m.lab_id = p_lab_id);
    IF NOT FOUND THEN RETURN '{"defer": "lab"}'; END IF;
    IF member.max_hours_per_week IS NOT NULL OR member.max_concurrent_bookings IS NOT NULL THEN
        RETURN '{"defer": "member_limits"}';
    END IF;

    -- The pool, locked as the service locks it; bookings of one pool queue here.
    SELECT p.*, it.gpu_count, it.price_per_hour,
           NOT EXISTS (SELECT 1 FROM catalog_nodepool_allowed_labs a WHERE a.nodepool_id = p.id)
           OR EXISTS (SELECT 1 FROM catalog_nodepool_allowed_labs a
                       WHERE a.nodepool_id = p.id AND a.lab_id = member.lab_id) AS lab_allowed
      INTO pool
      FROM catalog_nodepool p JOIN catalog_instancetype it ON it.id = p.instance_type_id
     WHERE p.id = p_pool_id
       FOR UPDATE OF p;
    IF NOT FOUND OR NOT pool.is_active OR NOT pool.lab_allowed THEN
        RETURN '{"defer": "pool"}';
    END IF;

    -- The pool's rules (labgpu.bookings.services._check_times); grids count from midnight UTC.
    IF p_end <= p_start
       -- The clock again, not only p_now: the pool lock may have kept us waiting.
       OR (NOT p_on_demand AND p_start < greatest(p_now, clock_timestamp()))
       OR p_start > p_now + make_interval(days => pool.max_days_ahead)
       OR extract(epoch FROM p_end - p_start) < pool.min_duration_minutes * 60::numeric
       OR extract(epoch FROM p_end - p_start) > pool.max_duration_minutes * 60::numeric THEN
        RETURN '{"defer": "times"}';
    END IF;
    instant_s := extract(epoch FROM p_end);
    IF mod(instant_s - floor(instant_s / 86400) * 86400, greatest(pool.granularity_minutes, 1) * 60) <> 0 THEN
        RETURN '{"defer": "times"}';
    END IF;
    instant_s := extract(epoch FROM p_start);
    IF NOT p_on_demand
       AND mod(instant_s - floor(instant_s / 86400) * 86400, greatest(pool.granularity_minutes, 1) * 60) <> 0 THEN
        RETURN '{"defer": "times"}';
    END IF;
    IF EXISTS (SELECT 1 FROM catalog_blackout b
                WHERE b.pool_id = pool.id AND b.start < p_end AND b."end" > p_start) THEN
        RETURN '{"defer": "blackout"}';
    END IF;

    -- A slot free over the whole reserved period (I-1); a fragmented pool is the service's job.
    held_from := p_start - CASE WHEN p_on_demand THEN interval '0'
                                     ELSE make_interval(mins => pool.provisioning_lead_minutes) END;
    held_until := p_end + make_interval(mins => pool.teardown_grace_minutes);
    SELECT coalesce(array_agg(b.slot), '{}') INTO taken
      FROM bookings_booking b
     WHERE b.pool_id = pool.id AND b.status = ANY (live)
       AND tstzrange(b.reserved_start, b.reserved_end, '[)')
           && tstzrange(held_from, held_until, '[)');
    SELECT min(s) INTO new_slot FROM generate_series(0, pool.capacity - 1) s WHERE s <> ALL (taken);
    IF new_slot IS NULL THEN RETURN '{"defer": "slot"}'; END IF;

    -- Quota (I-2): every UTC month the booking touches, its row locked, with room to spare.
    month_begin := date_trunc('month', p_start, 'UTC');
    LOOP
        month_end := (month_begin AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC';
        SELECT q.id, q.gpu_hours, q.notified_percent INTO quota
          FROM quotas_quota q
         WHERE q.lab_id = member.lab_id AND q.instance_type_id = pool.instance_type_id
           AND q.month = (month_begin AT TIME ZONE 'UTC')::date
           FOR UPDATE;
        IF NOT FOUND OR quota.gpu_hours <= 0 THEN RETURN '{"defer": "quota"}'; END IF;
        SELECT coalesce(sum(CASE
                   WHEN x.consumed_gpu_hours IS NOT NULL
                   THEN x.consumed_gpu_hours * x.seconds_in_month / x.seconds
                   ELSE x.seconds_in_month / 3600 * x.gpu_count END)
                 FILTER (WHERE x.status = ANY (consuming)), 0),
               coalesce(sum(x.seconds_in_month / 3600 * x.gpu_count)
                 FILTER (WHERE NOT x.status = ANY (consuming)), 0)
          INTO used, committed
          FROM (SELECT b.status, b.gpu_count, b.consumed_gpu_hours,
                       extract(epoch FROM least(b."end", month_end)
                                          - greatest(b.start, month_begin)) AS seconds_in_month,
                       extract(epoch FROM b."end" - b.start) AS seconds
                  FROM bookings_booking b JOIN catalog_nodepool bp ON bp.id = b.pool_id
                 WHERE b.lab_id = member.lab_id AND bp.instance_type_id = pool.instance_type_id
                   AND (b.status = ANY (live) OR b.status = 'completed')
                   AND b.start < month_end AND b."end" > month_begin) x;
        needed := extract(epoch FROM least(p_end, month_end) - greatest(p_start, month_begin))
                  / 3600 * pool.gpu_count;
        after_booking := used + committed + needed + 0.02;
        IF after_booking > quota.gpu_hours THEN RETURN '{"defer": "quota"}'; END IF;
        -- Crossing an alert threshold (QUOTA_ALERTS) sends email after commit: the service's job.
        IF (quota.notified_percent < 80 AND after_booking * 100 >= 80 * quota.gpu_hours)
           OR (quota.notified_percent < 100 AND after_booking * 100 >= 100 * quota.gpu_hours) THEN
            RETURN '{"defer": "quota_alert"}';
        END IF;
        EXIT WHEN month_end >= p_end;
        month_begin := month_end;
    END LOOP;

    new_status := CASE WHEN pool.requires_approval THEN 'pending' ELSE 'scheduled' END;
    INSERT INTO bookings_booking (
        created_at, updated_at, lab_id, user_id, pool_id, start, "end", purpose, status,
        status_changed_at, on_demand, slot, reserved_start, reserved_end, gpu_count,
        price_per_hour, decision_reason, failure_reason)
    VALUES (
        p_now, p_now, member.lab_id, caller.user_id, pool.id, p_start, p_end, p_purpose,
        new_status, p_now, p_on_demand, new_slot, held_from, held_until, pool.gpu_count,
        pool.price_per_hour, '', '')
    RETURNING id INTO new_id;
    INSERT INTO audit_auditevent (created_at, actor_id, action, target_type, target_id, lab_id, data)
    VALUES (p_now, caller.user_id, 'booking.create', 'bookings.booking', new_id::text,
            member.lab_id, jsonb_build_object('status', new_status, 'start', p_audit_start,
                                              'end', p_audit_end, 'pool', pool.slug));
    IF p_idempotency_key IS NOT NULL THEN
        -- A parallel request with the same key that committed first makes this raise a unique
        -- violation: the caller then replays through the service.
        INSERT INTO bookings_idempotencykey (user_id, key, request_fingerprint, booking_id, created_at)
        VALUES (caller.user_id, p_idempotency_key, p_fingerprint, new_id, p_now);
    END IF;
    -- As token_authenticate: touch the token at most once a minute, and never wait for it while
    -- holding the pool and quota locks (SKIP LOCKED: someone else is touching or editing it).
    UPDATE accounts_apitoken SET last_used_at = p_now
     WHERE id = (SELECT t.id FROM accounts_apitoken t
                  WHERE t.id = caller.token_id
                    AND (t.last_used_at IS NULL OR t.last_used_at < p_now - interval '60 seconds')
                    FOR UPDATE SKIP LOCKED);

    RETURN jsonb_build_object(
        'id', new_id,
        'status', new_status,
        'slot', new_slot,
        'gpu_count', pool.gpu_count,
        'price_per_hour', pool.price_per_hour::text,
        'pool_name', pool.name,
        'instance_type', pool.instance_type_id,
        'lab', jsonb_build_object('id', member.lab_id, 'name', member.name, 'slug', member.slug),
        'user', jsonb_build_object('id', caller.user_id, 'username', caller.username,
                                   'first_name', caller.first_name, 'last_name', caller.last_name));
END;
$$;
