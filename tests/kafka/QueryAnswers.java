// What the Java client answers to the questions kconsume's query calls ask, printed in the
// canonical lines tests/kafka/test_consumer_queries.c prints for its own answers; compiled at
// test time against the testkit's Kafka jars.
//   times BOOTSTRAP TOPIC P:TS...   KafkaConsumer.offsetsForTimes, one line per argument:
//                                   "P TS -> OFFSET RECORD_TS EPOCH" or "P TS -> none"
//   metadata BOOTSTRAP TOPIC        Admin: the cluster id, the brokers, every topic's name, and
//                                   TOPIC's id and partitions (leader, replicas, ISR)
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.*;

public class QueryAnswers {
    static String ids(List<Node> ns) {
        StringBuilder b = new StringBuilder();
        for (Node n : ns) b.append(b.length() > 0 ? "," : "").append(n.id());
        return b.toString();
    }

    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[1]);
        if (a[0].equals("times")) {
            p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
                for (int i = 3; i < a.length; i++) {
                    String[] pt = a[i].split(":");
                    TopicPartition tp = new TopicPartition(a[2], Integer.parseInt(pt[0]));
                    long ts = Long.parseLong(pt[1]);
                    OffsetAndTimestamp o = c.offsetsForTimes(Map.of(tp, ts)).get(tp);
                    System.out.println(pt[0] + " " + ts + " -> " + (o == null ? "none"
                        : o.offset() + " " + o.timestamp() + " " + o.leaderEpoch().orElse(-1)));
                }
            }
            return;
        }
        try (Admin ad = Admin.create(p)) {
            DescribeClusterResult dc = ad.describeCluster();
            System.out.println("cluster " + dc.clusterId().get());
            List<Node> nodes = new ArrayList<>(dc.nodes().get());
            nodes.sort(Comparator.comparingInt(Node::id));
            for (Node n : nodes)
                System.out.println("broker " + n.id() + " " + n.host() + " " + n.port() + " "
                    + (n.hasRack() ? n.rack() : "-"));
            TreeSet<String> names =
                new TreeSet<>(ad.listTopics(new ListTopicsOptions().listInternal(true)).names().get());
            System.out.println("topics " + String.join(",", names));
            TopicDescription d = ad.describeTopics(List.of(a[2])).allTopicNames().get().get(a[2]);
            System.out.println("topic " + d.name() + " " + d.topicId() + " internal " + d.isInternal());
            for (TopicPartitionInfo pi : d.partitions())
                System.out.println("partition " + pi.partition() + " leader "
                    + (pi.leader() == null ? -1 : pi.leader().id()) + " replicas "
                    + ids(pi.replicas()) + " isr " + ids(pi.isr()));
        }
    }
}
