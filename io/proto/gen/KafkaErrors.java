// Prints Kafka's error table (code, name, retriable, message) from the kafka-clients jar's own
// org.apache.kafka.common.protocol.Errors enum, one tab-separated line per error, sorted by code.
// Run by io/proto/gen/generate.py at codegen time; the output becomes kafka_errors.gen.c.
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;
import java.util.Arrays;
import java.util.Comparator;

public class KafkaErrors {
    public static void main(String[] args) {
        Errors[] all = Errors.values();
        Arrays.sort(all, Comparator.comparingInt(e -> e.code()));
        for (Errors e : all) {
            boolean retriable = e.exception() instanceof RetriableException;
            String msg = e.message() == null ? "" : e.message().replace('\t', ' ').replace('\n', ' ');
            System.out.println(e.code() + "\t" + e.name() + "\t" + (retriable ? 1 : 0) + "\t" + msg);
        }
    }
}
