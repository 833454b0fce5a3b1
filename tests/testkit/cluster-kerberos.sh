# The `gssapi` listeners of tests/testkit/cluster: a real MIT KDC (Debian's krb5-kdc) on loopback
# and two broker listeners that authenticate with SASL GSSAPI (Kerberos), one SASL_PLAINTEXT
# (port kind 6) and one SASL_SSL (port kind 7). Sourced by `cluster`; every name here starts with
# krb_ so that the other listeners' code stays apart from it.
#
# Everything lives in DIR/krb: the KDC's database, stash and logs, a private krb5.conf (clients
# and the brokers' JVMs read it, never /etc/krb5.conf) and kdc.conf (KRB5_KDC_PROFILE), and the
# keytabs. The KDC runs in the foreground (krb5kdc -n) under setsid, stopped by its recorded pid
# like the brokers.
#
# Principals (realm KCTEST.LOCAL):
#   kafka/localhost          the brokers' (the host part is the GSSAPI listeners' advertised
#                            host: a client asks for service@host, "kafka@localhost")
#   kconsume-client          CLIENT_PRINCIPAL, in CLIENT_KEYTAB
#   kconsume-other           a second client principal in CLIENT_KEYTAB (two consumers, two
#                            principals)
#   kconsume-short           CLIENT_SHORT_PRINCIPAL: tickets live krb_short_life seconds, for
#                            ticket renewal tests; in CLIENT_KEYTAB too
# The GSSAPI listeners have connections.max.reauth.ms=krb_reauth_ms, so clients re-authenticate
# (KIP-368) while a test runs.

krb_realm=KCTEST.LOCAL
krb_short_life=${KC_KRB_SHORT_LIFE:-30}
krb_reauth_ms=${KC_KRB_REAUTH_MS:-20000}

krb_port() { echo $((port_base + 31)); } # past the 3 nodes' ten ports each (base + 30: the token endpoint)
krb_dir() { echo "$dir/krb"; }

# The KDC's pid if it is alive and still ours (its environment names this cluster's kdc.conf).
krb_pid() {
    local f p
    f=$(krb_dir)/kdc.pid
    [[ -f $f ]] || return 0
    p=$(<"$f")
    [[ -n $p && -r /proc/$p/cmdline ]] || return 0
    tr '\0' ' ' <"/proc/$p/cmdline" | grep -q '^[^ ]*krb5kdc ' || return 0
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "KRB5_KDC_PROFILE=$(krb_dir)/kdc.conf" &&
        echo "$p"
    return 0
}

krb_check_ports() {
    has_listener gssapi || return 0
    local n k
    ! port_open "$(krb_port)" || die "port $(krb_port) (KDC) is already in use on 127.0.0.1 (pick another --port-base)"
    for ((n = 1; n <= brokers; n++)); do
        for k in 6 7; do
            ! port_open "$(port "$n" "$k")" ||
                die "port $(port "$n" "$k") is already in use on 127.0.0.1 (pick another --port-base)"
        done
    done
}

krb_write_conf() {
    local k
    k=$(krb_dir)
    # udp_preference_limit=1: every request goes over TCP (the JVM's default too), so neither
    # side depends on UDP on loopback. rdns/dns_canonicalize_hostname off: "kafka@localhost" is
    # kafka/localhost exactly, whatever /etc/hosts says about 127.0.0.1.
    cat >"$k/krb5.conf" <<EOF
[libdefaults]
    default_realm = $krb_realm
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    ticket_lifetime = 1h
    forwardable = false
    kdc_timeout = 3000
    max_retries = 1
    permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
    $krb_realm = {
        kdc = 127.0.0.1:$(krb_port)
    }

[domain_realm]
    localhost = $krb_realm
EOF
    cat >"$k/kdc.conf" <<EOF
[kdcdefaults]
    kdc_listen = 127.0.0.1:$(krb_port)
    kdc_tcp_listen = 127.0.0.1:$(krb_port)

[realms]
    $krb_realm = {
        database_name = $k/principal
        key_stash_file = $k/stash
        acl_file = $k/kadm5.acl
        max_life = 1h
        max_renewable_life = 0
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }

[logging]
    kdc = FILE:$k/kdc.log
    default = FILE:$k/kdc.log
EOF
    : >"$k/kadm5.acl"
}

# Creates the realm, the principals and the keytabs, and starts the KDC.
krb_up() {
    has_listener gssapi || return 0
    command -v krb5kdc kdb5_util kadmin.local >/dev/null 2>&1 ||
        die "the gssapi listener needs MIT Kerberos' KDC (run tests/testkit/install-deps: krb5-kdc, krb5-admin-server)"
    local k t0=$SECONDS i
    k=$(krb_dir)
    rm -rf "$k"
    mkdir -p "$k"
    krb_write_conf
    export KRB5_CONFIG=$k/krb5.conf KRB5_KDC_PROFILE=$k/kdc.conf
    # A fresh master password per cluster; it never leaves DIR/krb (the stash holds the key).
    head -c 24 /dev/urandom | base64 >"$k/master.pw"
    kdb5_util create -s -r "$krb_realm" -P "$(<"$k/master.pw")" >"$k/setup.log" 2>&1 ||
        { cat "$k/setup.log" >&2; die "kdb5_util create failed"; }
    {
        echo "addprinc -randkey kafka/localhost@$krb_realm"
        echo "addprinc -randkey kconsume-client@$krb_realm"
        echo "addprinc -randkey kconsume-other@$krb_realm"
        echo "addprinc -randkey -maxlife \"$krb_short_life seconds\" kconsume-short@$krb_realm"
        echo "ktadd -k $k/broker.keytab -norandkey kafka/localhost@$krb_realm"
        echo "ktadd -k $k/client.keytab -norandkey kconsume-client@$krb_realm kconsume-other@$krb_realm kconsume-short@$krb_realm"
    } | kadmin.local -r "$krb_realm" >>"$k/setup.log" 2>&1 ||
        { cat "$k/setup.log" >&2; die "kadmin.local failed"; }
    [[ -s $k/broker.keytab && -s $k/client.keytab ]] || { cat "$k/setup.log" >&2; die "no keytabs were written"; }
    # The short-lived principal's tickets: the TGT is bounded by the client's max_life and every
    # service ticket by the TGT, so the whole chain expires after krb_short_life seconds.
    # Start-up has ended in failure only when the child is gone: until it has exec'd krb5kdc (a
    # loaded machine can take a while), its command line is still bash's or setsid's and its
    # environment lacks KRB5_KDC_PROFILE, so krb_pid does not recognise it yet.
    setsid krb5kdc -n -r "$krb_realm" >"$k/kdc.stdout" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$k/kdc.pid"
    for ((i = 0; i < 200; i++)); do
        port_open "$(krb_port)" && break
        kill -0 "$pid" 2>/dev/null ||
            { cat "$k/kdc.stdout" "$k/kdc.log" >&2 2>/dev/null; die "krb5kdc exited during start-up"; }
        sleep 0.05
    done
    port_open "$(krb_port)" || { krb_down; die "krb5kdc does not listen on 127.0.0.1:$(krb_port) after 10 s"; }
    note "KDC up on 127.0.0.1:$(krb_port) in $((SECONDS - t0))s (realm $krb_realm, $k)"
}

krb_down() {
    local p
    p=$(krb_pid)
    if [[ -n $p ]]; then
        stop_pids "$p"
        [[ -z $(krb_pid) ]] || die "krb5kdc (pid $p) is still running"
    fi
    rm -f "$(krb_dir)/kdc.pid"
}

# The JVM flag that points a broker at the private krb5.conf.
krb_jvm_flags() {
    has_listener gssapi || return 0
    echo "-Djava.security.krb5.conf=$(krb_dir)/krb5.conf"
}

# Appends the GSSAPI listeners to write_node_config's listeners/advertised/map variables.
krb_listeners() {
    has_listener gssapi || return 0
    local n=$1
    lst+=",GSSAPI://127.0.0.1:$(port "$n" 6),GSSAPI_SSL://127.0.0.1:$(port "$n" 7)"
    adv+=",GSSAPI://localhost:$(port "$n" 6),GSSAPI_SSL://localhost:$(port "$n" 7)"
    map+=",GSSAPI:SASL_PLAINTEXT,GSSAPI_SSL:SASL_SSL"
}

krb_broker_config() {
    has_listener gssapi || return 0
    local k l jaas
    k=$(krb_dir)
    jaas="com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab=\"$k/broker.keytab\" principal=\"kafka/localhost@$krb_realm\";"
    echo "sasl.kerberos.service.name=kafka"
    for l in gssapi gssapi_ssl; do
        echo "listener.name.$l.sasl.enabled.mechanisms=GSSAPI"
        echo "listener.name.$l.gssapi.sasl.jaas.config=$jaas"
        echo "listener.name.$l.gssapi.connections.max.reauth.ms=$krb_reauth_ms"
    done
}

krb_print_vars() {
    has_listener gssapi || return 0
    local n out="" ssl=""
    for ((n = 1; n <= brokers; n++)); do
        out+="${out:+,}localhost:$(port "$n" 6)"
        ssl+="${ssl:+,}localhost:$(port "$n" 7)"
    done
    echo "GSSAPI_BOOTSTRAP=$out"
    echo "GSSAPI_SSL_BOOTSTRAP=$ssl"
    echo "KRB5_CONFIG=$(krb_dir)/krb5.conf"
    echo "CLIENT_KEYTAB=$(krb_dir)/client.keytab"
    echo "CLIENT_PRINCIPAL=kconsume-client@$krb_realm"
    echo "CLIENT_OTHER_PRINCIPAL=kconsume-other@$krb_realm"
    echo "CLIENT_SHORT_PRINCIPAL=kconsume-short@$krb_realm"
    echo "CLIENT_SHORT_LIFE_S=$krb_short_life"
    echo "KDC_LOG=$(krb_dir)/kdc.log"
}
