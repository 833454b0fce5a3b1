// Serialises each case of consumer_protocol.cases with Java's own ConsumerProtocol (and the
// StickyAssignor's user-data serializer, via reflection: it is package-private) and prints the
// bytes as hex, one line per case. Compiled and run by consumer_protocol.test.sh.
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;

public class ConsumerProtocolInterop {
    static String val(String field) {
        return field.substring(field.indexOf('=') + 1);
    }

    static ByteBuffer bytes(String v) {
        return v.equals("null") ? null : ByteBuffer.wrap(HexFormat.of().parseHex(v));
    }

    static List<String> topics(String v) {
        List<String> out = new ArrayList<>();
        for (String t : v.split(",")) if (!t.isEmpty()) out.add(t);
        return out;
    }

    static List<TopicPartition> parts(String v) {
        List<TopicPartition> out = new ArrayList<>();
        for (String tp : v.split(";")) {
            if (tp.isEmpty()) continue;
            String[] kv = tp.split(":");
            for (String p : kv[1].split(",")) out.add(new TopicPartition(kv[0], Integer.parseInt(p)));
        }
        return out;
    }

    static String hex(ByteBuffer b) {
        byte[] a = new byte[b.remaining()];
        b.duplicate().get(a);
        return HexFormat.of().formatHex(a);
    }

    public static void main(String[] args) throws Exception {
        Method sticky = StickyAssignor.class.getDeclaredMethod("serializeTopicPartitionAssignment",
                AbstractStickyAssignor.MemberData.class);
        sticky.setAccessible(true);
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split("\\|", -1);
            ByteBuffer out;
            switch (f[0]) {
                case "sub": {
                    String rack = val(f[6]);
                    Subscription s = new Subscription(topics(val(f[2])), bytes(val(f[3])),
                            parts(val(f[4])), Integer.parseInt(val(f[5])),
                            rack.equals("null") ? Optional.empty() : Optional.of(rack));
                    out = ConsumerProtocol.serializeSubscription(s, Short.parseShort(f[1]));
                    break;
                }
                case "assign":
                    out = ConsumerProtocol.serializeAssignment(
                            new Assignment(parts(val(f[2])), bytes(val(f[3]))), Short.parseShort(f[1]));
                    break;
                case "sticky":
                    out = (ByteBuffer) sticky.invoke(null, new AbstractStickyAssignor.MemberData(
                            parts(val(f[2])), Optional.of(Integer.parseInt(f[1]))));
                    break;
                default:
                    throw new IllegalArgumentException("bad case: " + line);
            }
            System.out.println(f[0] + " " + hex(out));
        }
    }
}
