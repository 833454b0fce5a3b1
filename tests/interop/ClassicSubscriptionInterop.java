// The JoinGroup protocol metadata a Java consumer sends, built the way Java's ConsumerCoordinator
// builds it: the real assignor's subscriptionUserData (after onAssignment where the scenario has
// one), the owned partitions, the generation and the rack, through ConsumerProtocol. One hex line
// per scenario; classic_sub prints kconsume's bytes for the same scenarios
// (classic_subscription.test.sh compares them).
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;

public class ClassicSubscriptionInterop {
    static List<TopicPartition> tps(String spec) {
        List<TopicPartition> out = new ArrayList<>();
        if (spec.isEmpty()) return out;
        for (String tp : spec.split(",")) {
            int i = tp.lastIndexOf('-');
            out.add(new TopicPartition(tp.substring(0, i), Integer.parseInt(tp.substring(i + 1))));
        }
        return out;
    }

    static ConsumerPartitionAssignor assignor(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
        }
        throw new IllegalArgumentException(name);
    }

    public static void main(String[] args) throws Exception {
        // assignor | topics | owned | generation | rack | last assignment | its generation
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Paths.get(args[0]))) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split("\\|", -1);
            ConsumerPartitionAssignor a = assignor(f[0]);
            Set<String> topics = new HashSet<>(Arrays.asList(f[1].split(",")));
            if (!f[5].equals("none"))
                a.onAssignment(new ConsumerPartitionAssignor.Assignment(tps(f[5])),
                        new ConsumerGroupMetadata("g", Integer.parseInt(f[6]), "m", Optional.empty()));
            ConsumerPartitionAssignor.Subscription s = new ConsumerPartitionAssignor.Subscription(
                    new ArrayList<>(topics), a.subscriptionUserData(topics), tps(f[2]),
                    Integer.parseInt(f[3]), f[4].isEmpty() ? Optional.empty() : Optional.of(f[4]));
            byte[] b = org.apache.kafka.common.utils.Utils.toArray(ConsumerProtocol.serializeSubscription(s));
            StringBuilder sb = new StringBuilder();
            for (byte x : b) sb.append(String.format("%02x", x));
            System.out.println(sb);
        }
    }
}
