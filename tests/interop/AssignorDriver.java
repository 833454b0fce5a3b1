// Runs Java's own classic-group assignors (kafka-clients) over assignment cases, for
// tests/interop/assignors.test.sh, which diffs this output against tests/interop/assign_driver.c.
//
//   java AssignorDriver gen <seed> <count> <chains> <out>   writes cases to <out>
//   java AssignorDriver run <cases-file> <out>              every assignor's result per case
//
// Case format (one token per field, '-' = none/null):
//   case <id>
//   topic <name> <partitions> [<racks of p0> <racks of p1> ...]   racks "a,b", '~' = no rack
//   member <id> <instance> <rack> <generation> <topics a,b> <owned t:p,..> <userdata>
//   end
// userdata: '-' none; 'g<N>:<tps>' sticky V1 (generation N); 'v0:<tps>' sticky V0;
//           'c<N>' cooperative (generation N). <tps> is '-' or t:p,t:p.
// Output: "case <id> <assignor>" then one "<member> <t:p,..|->" line per member in input order,
// partitions sorted by topic then partition; "ERROR <exception>" when the assignor throws.
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.*;

public class AssignorDriver {
    static final String[] ASSIGNORS = {"range", "roundrobin", "sticky", "cooperative-sticky"};

    static final class Member {
        String id, instance, rack, userData = "-";
        int gen = -1;
        List<String> topics = new ArrayList<>();
        List<TopicPartition> owned = new ArrayList<>();
    }

    static final class Topic {
        String name;
        int n;
        List<List<String>> racks; // null = no rack info
    }

    static final class Case {
        String id;
        List<Topic> topics = new ArrayList<>();
        List<Member> members = new ArrayList<>();
    }

    static PrintStream out;

    public static void main(String[] args) throws Exception {
        // Results go to the file named last on the command line, never to stdout: the Kafka
        // classes log (e.g. conflicting claims at ERROR) and a logging backend on the class path
        // may well print to stdout.
        out = new PrintStream(new java.io.FileOutputStream(args[args.length - 1]), false, "UTF-8");
        if (args[0].equals("gen")) {
            gen(Long.parseLong(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
        } else {
            for (Case c : parse(Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)))
                for (String a : ASSIGNORS)
                    print(c, a, run(c, a));
        }
        out.flush();
    }

    // ---- parsing and printing -----------------------------------------------------------------

    static List<TopicPartition> tps(String s) {
        List<TopicPartition> l = new ArrayList<>();
        if (s.equals("-")) return l;
        for (String e : s.split(",")) {
            int i = e.lastIndexOf(':');
            l.add(new TopicPartition(e.substring(0, i), Integer.parseInt(e.substring(i + 1))));
        }
        return l;
    }

    static String tpsStr(Collection<TopicPartition> l) {
        if (l.isEmpty()) return "-";
        StringBuilder b = new StringBuilder();
        for (TopicPartition tp : l) {
            if (b.length() > 0) b.append(',');
            b.append(tp.topic()).append(':').append(tp.partition());
        }
        return b.toString();
    }

    static String opt(String s) { return s.equals("-") ? null : s; }

    static List<Case> parse(List<String> lines) {
        List<Case> cases = new ArrayList<>();
        Case c = null;
        for (String line : lines) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "case": c = new Case(); c.id = f[1]; break;
                case "topic": {
                    Topic t = new Topic();
                    t.name = f[1];
                    t.n = Integer.parseInt(f[2]);
                    if (f.length > 3) {
                        t.racks = new ArrayList<>();
                        for (int p = 0; p < t.n; p++) {
                            List<String> r = new ArrayList<>();
                            if (!f[3 + p].equals("-"))
                                for (String x : f[3 + p].split(",")) r.add(x.equals("~") ? null : x);
                            t.racks.add(r);
                        }
                    }
                    c.topics.add(t);
                    break;
                }
                case "member": {
                    Member m = new Member();
                    m.id = f[1];
                    m.instance = opt(f[2]);
                    m.rack = opt(f[3]);
                    m.gen = Integer.parseInt(f[4]);
                    if (!f[5].equals("-")) m.topics.addAll(Arrays.asList(f[5].split(",")));
                    m.owned = tps(f[6]);
                    m.userData = f[7];
                    c.members.add(m);
                    break;
                }
                case "end": cases.add(c); break;
                default: break;
            }
        }
        return cases;
    }

    static void writeCase(Case c) {
        out.println("case " + c.id);
        for (Topic t : c.topics) {
            StringBuilder b = new StringBuilder("topic " + t.name + " " + t.n);
            if (t.racks != null)
                for (List<String> r : t.racks) {
                    b.append(' ');
                    if (r.isEmpty()) b.append('-');
                    else {
                        List<String> s = new ArrayList<>();
                        for (String x : r) s.add(x == null ? "~" : x);
                        b.append(String.join(",", s));
                    }
                }
            out.println(b);
        }
        for (Member m : c.members)
            out.println("member " + m.id + " " + (m.instance == null ? "-" : m.instance) + " "
                    + (m.rack == null ? "-" : m.rack) + " " + m.gen + " "
                    + (m.topics.isEmpty() ? "-" : String.join(",", m.topics)) + " " + tpsStr(m.owned)
                    + " " + m.userData);
        out.println("end");
    }

    static void print(Case c, String a, Map<String, List<TopicPartition>> r) {
        out.println("case " + c.id + " " + a);
        if (r == null) { out.println("ERROR"); return; }
        for (Member m : c.members) {
            List<TopicPartition> l = new ArrayList<>(r.getOrDefault(m.id, Collections.emptyList()));
            l.sort((x, y) -> x.topic().equals(y.topic()) ? Integer.compare(x.partition(), y.partition())
                    : x.topic().compareTo(y.topic()));
            out.println(m.id + " " + tpsStr(l));
        }
    }

    // ---- running Java's assignors -------------------------------------------------------------

    static ByteBuffer userData(String ud) {
        if (ud.equals("-")) return null;
        if (ud.startsWith("c")) {
            ByteBuffer b = ByteBuffer.allocate(4);
            b.putInt(Integer.parseInt(ud.substring(1)));
            b.flip();
            return b;
        }
        // StickyAssignor's user data: [topic STRING, partitions [INT32]] then (V1) generation
        int colon = ud.indexOf(':');
        boolean v1 = ud.startsWith("g");
        Map<String, List<Integer>> byTopic = new LinkedHashMap<>();
        for (TopicPartition tp : tps(ud.substring(colon + 1)))
            byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
        ByteBuffer b = ByteBuffer.allocate(1 << 16);
        b.putInt(byTopic.size());
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            b.putShort((short) name.length);
            b.put(name);
            b.putInt(e.getValue().size());
            for (int p : e.getValue()) b.putInt(p);
        }
        if (v1) b.putInt(Integer.parseInt(ud.substring(1, colon)));
        b.flip();
        return b;
    }

    static Cluster cluster(Case c) {
        Map<String, Node> nodes = new LinkedHashMap<>();
        Node noRack = new Node(0, "h0", 9092, null);
        List<PartitionInfo> parts = new ArrayList<>();
        int nextId = 1;
        for (Topic t : c.topics) {
            for (int p = 0; p < t.n; p++) {
                List<Node> replicas = new ArrayList<>();
                if (t.racks == null) replicas.add(noRack);
                else
                    for (String r : t.racks.get(p)) {
                        if (r == null) { replicas.add(noRack); continue; }
                        Node n = nodes.get(r);
                        if (n == null) { n = new Node(nextId, "h" + nextId, 9092, r); nextId++; nodes.put(r, n); }
                        replicas.add(n);
                    }
                Node[] rs = replicas.toArray(new Node[0]);
                parts.add(new PartitionInfo(t.name, p, rs.length > 0 ? rs[0] : noRack, rs, rs));
            }
        }
        List<Node> all = new ArrayList<>(nodes.values());
        all.add(noRack);
        return new Cluster("c", all, parts, Collections.emptySet(), Collections.emptySet());
    }

    static ConsumerPartitionAssignor assignor(String a) {
        switch (a) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            default: return new CooperativeStickyAssignor();
        }
    }

    static Map<String, List<TopicPartition>> run(Case c, String a) {
        // As ConsumerCoordinator.onLeaderElected builds it: a HashMap filled in JoinGroup order.
        Map<String, Subscription> subs = new HashMap<>();
        for (Member m : c.members) {
            String ud = m.userData;
            boolean mine = a.equals("sticky") ? !ud.startsWith("c") : a.equals("cooperative-sticky") && ud.startsWith("c");
            Subscription s = new Subscription(m.topics, mine ? userData(ud) : null, m.owned, m.gen,
                    Optional.ofNullable(m.rack));
            s.setGroupInstanceId(Optional.ofNullable(m.instance));
            subs.put(m.id, s);
        }
        try {
            // a fresh assignor each time: AbstractStickyAssignor keeps maxGeneration across calls
            Map<String, ConsumerPartitionAssignor.Assignment> r =
                    assignor(a).assign(cluster(c), new GroupSubscription(subs)).groupAssignment();
            Map<String, List<TopicPartition>> res = new HashMap<>();
            r.forEach((k, v) -> res.put(k, v.partitions()));
            return res;
        } catch (RuntimeException e) {
            System.err.println("THROWN case " + c.id + " " + a + ": " + e);
            return null;
        }
    }

    // ---- the case generator -------------------------------------------------------------------

    static String hex(Random r, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) b.append(Character.forDigit(r.nextInt(16), 16));
        return b.toString();
    }

    static final String[] TOPICS = {"t0", "t1", "t2", "orders", "Payments", "t-\u00e9v", "z9", "a.b_c"};
    static final String[] RACKS = {"r0", "r1", "r2"};

    static Member newMember(Random r, int rackMode, List<String> pool, boolean uniform, List<String> uniformTopics) {
        Member m = new Member();
        int kind = r.nextInt(20);
        m.id = kind == 0 ? "m\u00e9-" + hex(r, 3) : kind == 1 ? "\ud834\udd1e" + hex(r, 3)
                : kind == 2 ? "\uff21" + hex(r, 2) : "consumer-" + hex(r, r.nextInt(6) + 1);
        if (r.nextInt(10) < 4) m.instance = "inst-" + hex(r, 2);
        if (rackMode == 2 || (rackMode == 1 && r.nextBoolean())) m.rack = RACKS[r.nextInt(RACKS.length)];
        if (uniform) {
            m.topics.addAll(uniformTopics);
            Collections.shuffle(m.topics, r);
        } else if (r.nextInt(20) > 0) {
            for (String t : pool) if (r.nextInt(3) > 0) m.topics.add(t);
            if (m.topics.isEmpty()) m.topics.add(pool.get(r.nextInt(pool.size())));
        }
        m.gen = r.nextInt(6) - 1;
        return m;
    }

    static Case randomCase(Random r, String id, boolean withOwnership) {
        return randomCase(r, id, withOwnership, 8, 5, 30);
    }

    static Case randomCase(Random r, String id, boolean withOwnership, int maxM, int maxT, int maxP) {
        Case c = new Case();
        c.id = id;
        int nt = 1 + r.nextInt(maxT);
        List<String> pool = new ArrayList<>(Arrays.asList(TOPICS));
        Collections.shuffle(pool, r);
        pool = new ArrayList<>(pool.subList(0, nt));
        int rackMode = r.nextInt(3); // 0 none, 1 some members, 2 all members
        boolean replicaRacks = rackMode > 0 ? r.nextInt(5) > 0 : r.nextInt(5) == 0;
        for (String name : pool) {
            if (r.nextInt(15) == 0) continue; // subscribed but absent from metadata
            Topic t = new Topic();
            t.name = name;
            t.n = 1 + r.nextInt(r.nextInt(4) == 0 ? maxP : Math.min(8, maxP));
            if (replicaRacks && r.nextInt(6) > 0) {
                t.racks = new ArrayList<>();
                boolean full = r.nextInt(4) == 0;
                for (int p = 0; p < t.n; p++) {
                    List<String> rs = new ArrayList<>();
                    if (full) rs.addAll(Arrays.asList(RACKS));
                    else {
                        int k = r.nextInt(3) + (r.nextInt(10) == 0 ? 0 : 1);
                        for (int i = 0; i < k; i++) rs.add(r.nextInt(12) == 0 ? null : RACKS[r.nextInt(RACKS.length)]);
                    }
                    t.racks.add(rs);
                }
            }
            c.topics.add(t);
        }
        if (r.nextInt(8) == 0) { // a topic nobody subscribes to
            Topic t = new Topic();
            t.name = "unsubscribed";
            t.n = 3;
            c.topics.add(t);
        }
        int nm = 1 + r.nextInt(maxM);
        boolean uniform = r.nextBoolean();
        List<String> uni = new ArrayList<>(pool.subList(0, 1 + r.nextInt(pool.size())));
        Set<String> ids = new HashSet<>();
        while (c.members.size() < nm) {
            Member m = newMember(r, rackMode, pool, uniform, uni);
            if (ids.add(m.id)) c.members.add(m);
        }
        if (withOwnership) {
            List<TopicPartition> all = new ArrayList<>();
            for (Topic t : c.topics) for (int p = 0; p < t.n; p++) all.add(new TopicPartition(t.name, p));
            int density = r.nextInt(4);
            for (TopicPartition tp : all) {
                if (r.nextInt(4) >= density) continue;
                Member m = c.members.get(r.nextInt(nm));
                m.owned.add(tp);
                if (r.nextInt(6) == 0) c.members.get(r.nextInt(nm)).owned.add(tp); // a conflict
            }
            for (Member m : c.members) {
                Collections.shuffle(m.owned, r);
                LinkedHashSet<TopicPartition> dedup = new LinkedHashSet<>(m.owned);
                m.owned = new ArrayList<>(dedup);
                int u = r.nextInt(10);
                if (u < 5) {
                    List<TopicPartition> prev = r.nextBoolean() ? m.owned : new ArrayList<>();
                    if (prev.isEmpty()) for (TopicPartition tp : all) if (r.nextInt(5) == 0) prev.add(tp);
                    m.userData = (u == 0 ? "v0:" : "g" + (r.nextInt(5) - 1) + ":") + tpsStr(prev);
                } else if (u < 7) {
                    m.userData = "c" + (r.nextInt(5) - 1);
                }
            }
        }
        return c;
    }

    // Successive rebalances: each round's owned partitions (and sticky user data) are what the
    // previous round assigned, with members joining, leaving or changing subscriptions between.
    static List<Case> chain(Random r, String id, int rounds, int maxM, int maxP) {
        List<Case> out = new ArrayList<>();
        Case c = randomCase(r, id + "-0", false, maxM, 5, maxP);
        List<String> pool = new ArrayList<>();
        for (Topic t : c.topics) pool.add(t.name);
        if (pool.isEmpty()) pool.add("t0");
        int rackMode = r.nextInt(3);
        int gen = 1;
        for (int round = 0; round < rounds; round++) {
            out.add(c);
            Map<String, List<TopicPartition>> coop = run(c, "cooperative-sticky");
            Map<String, List<TopicPartition>> sticky = run(c, "sticky");
            Case n = new Case();
            n.id = id + "-" + (round + 1);
            n.topics = c.topics;
            gen++;
            for (Member m : c.members) {
                if (r.nextInt(8) == 0) continue; // left
                Member k = new Member();
                k.id = m.id; k.instance = m.instance; k.rack = m.rack; k.topics = m.topics;
                k.gen = r.nextInt(8) == 0 ? gen - 2 : gen;
                if (coop != null) k.owned = new ArrayList<>(coop.getOrDefault(m.id, Collections.emptyList()));
                if (sticky != null)
                    k.userData = "g" + k.gen + ":" + tpsStr(sticky.getOrDefault(m.id, Collections.emptyList()));
                if (r.nextInt(10) == 0) { // subscription change
                    k.topics = new ArrayList<>();
                    for (String t : pool) if (r.nextBoolean()) k.topics.add(t);
                }
                n.members.add(k);
            }
            int joins = r.nextInt(3) == 0 ? 1 + r.nextInt(2) : 0;
            for (int j = 0; j < joins && n.members.size() < maxM; j++) {
                Member m = newMember(r, rackMode, pool, r.nextBoolean(), pool);
                boolean dup = false;
                for (Member x : n.members) dup |= x.id.equals(m.id);
                if (!dup) { m.gen = -1; n.members.add(m); }
            }
            Collections.shuffle(n.members, r); // JoinGroup order varies between rounds
            if (n.members.isEmpty()) break;
            c = n;
        }
        return out;
    }

    static void gen(long seed, int count, int chains) {
        for (int i = 0; i < count; i++)
            writeCase(randomCase(new Random(seed * 1000003L + i), "r" + i, i % 5 != 0));
        for (int i = 0; i < chains; i++)
            for (Case c : chain(new Random(seed * 7919L + i), "ch" + i, 4, 8, 30))
                writeCase(c);
        // a few large groups, as a sanity check of scale (not counted towards the 1-8 members)
        for (int i = 0; i < 4; i++)
            writeCase(randomCase(new Random(seed * 31L + i), "big" + i, true, 120, 8, 400));
        for (int i = 0; i < 2; i++)
            for (Case c : chain(new Random(seed * 37L + i), "bigch" + i, 3, 60, 200))
                writeCase(c);
    }
}
