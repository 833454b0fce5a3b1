// A broker metrics plugin that records the client telemetry (KIP-714 PushTelemetry) a broker
// receives, so that a test can check what a client pushed. tests/testkit/cluster compiles it
// against the cluster's Kafka jars and loads it with `up --telemetry-recorder FILE`
// (metric.reporters=KcTelemetryRecorder, kc.telemetry.out=FILE).
//
// One line of JSON per push is appended to FILE:
//   {"client_instance_id": "...", "client_instance_uuid": "...", "terminating": false,
//    "content_type": "...", "client_id": "...", "node_id": "1",
//    "resource": {"key": "value", ...}, "scope": "...",
//    "metrics": [{"name": "...", "type": "gauge"|"sum"|"other", "monotonic": true,
//                 "temporality": "delta"|"cumulative"|"unspecified",
//                 "points": [{"value": 1.5, "start_ns": 0, "time_ns": 0, "attributes": {...}}]}]}
// client_instance_id is Kafka's form of the id (URL-safe base64, as brokers and the Java client
// log it), client_instance_uuid the same 16 bytes as a canonical UUID (hex, big-endian); node_id
// is the receiving broker's. "monotonic" and "temporality" appear on sums only. A payload that
// does not parse as OTLP MetricsData gives {"error": "...", "client_instance_id": ..., ...}
// instead: a test then sees a bad push rather than a missing one. A non-finite double is written
// as null (JSON has no NaN). The Java client sends one resource with one scope; should a payload
// hold more, their resource attributes are merged, the first scope's name is kept and every
// metric is listed.
//
// Only what a Kafka release's libs/ folder holds may be used (the broker's class path): the OTLP
// classes come shaded in kafka-clients, and the JSON is written by hand. ClientTelemetry is the
// interface every release with KIP-714 (3.7 and later) calls; 4.2 deprecated it for removal in
// favour of ClientTelemetryExporterProvider (4.4 still calls its receiver), hence the warnings
// suppressed below.

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.AnyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.KeyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Sum;

@SuppressWarnings({"deprecation", "removal"})
public class KcTelemetryRecorder implements MetricsReporter, ClientTelemetry {
    public static final String OUT_CONFIG = "kc.telemetry.out";

    // Every instance in a JVM writes through this lock: a broker may create the reporter more
    // than once (reconfiguration), and lines must never interleave.
    private static final Object WRITE_LOCK = new Object();

    private volatile String out;
    private volatile String nodeId;
    private volatile boolean warned;

    @Override
    public void configure(Map<String, ?> configs) {
        Object v = configs.get(OUT_CONFIG);
        out = v == null ? null : v.toString();
        Object id = configs.get("node.id");
        if (id == null) id = configs.get("broker.id");
        nodeId = id == null ? null : id.toString();
    }

    // The broker's own metrics are of no interest here.
    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this::record;
    }

    private void record(AuthorizableRequestContext ctx, ClientTelemetryPayload payload) {
        String line;
        try {
            line = describe(ctx, payload);
        } catch (Exception | LinkageError e) {
            // A parse failure (or anything else) becomes a line of its own; nothing is thrown
            // back into the broker's request handling.
            StringBuilder b = new StringBuilder(256);
            b.append("{\"error\": ");
            quote(b, String.valueOf(e));
            b.append(", ");
            try {
                header(b, ctx, payload);
            } catch (RuntimeException again) {
                b.setLength(0);
                b.append("{\"error\": ");
                quote(b, String.valueOf(e));
            }
            b.append('}');
            line = b.toString();
        }
        append(line);
    }

    private void header(StringBuilder b, AuthorizableRequestContext ctx, ClientTelemetryPayload p) {
        Uuid id = p.clientInstanceId();
        b.append("\"client_instance_id\": ");
        quote(b, id == null ? null : id.toString());
        b.append(", \"client_instance_uuid\": ");
        quote(b, id == null ? null
                : new UUID(id.getMostSignificantBits(), id.getLeastSignificantBits()).toString());
        b.append(", \"terminating\": ").append(p.isTerminating());
        b.append(", \"content_type\": ");
        quote(b, p.contentType());
        b.append(", \"client_id\": ");
        quote(b, ctx == null ? null : ctx.clientId());
        b.append(", \"node_id\": ");
        quote(b, nodeId);
    }

    private String describe(AuthorizableRequestContext ctx, ClientTelemetryPayload p)
            throws Exception {
        ByteBuffer data = p.data();
        // A view of its own: the buffer's position is not this plugin's to move.
        MetricsData md =
                MetricsData.parseFrom(data == null ? ByteBuffer.allocate(0) : data.duplicate());
        Map<String, String> resource = new LinkedHashMap<>();
        String scope = null;
        StringBuilder metrics = new StringBuilder(4096);
        boolean first = true;
        for (ResourceMetrics rm : md.getResourceMetricsList()) {
            for (KeyValue kv : rm.getResource().getAttributesList()) {
                resource.put(kv.getKey(), text(kv.getValue()));
            }
            for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                if (scope == null) scope = sm.getScope().getName();
                for (Metric m : sm.getMetricsList()) {
                    if (!first) metrics.append(", ");
                    first = false;
                    metric(metrics, m);
                }
            }
        }
        StringBuilder b = new StringBuilder(metrics.length() + 512);
        b.append('{');
        header(b, ctx, p);
        b.append(", \"resource\": ");
        attributes(b, resource);
        b.append(", \"scope\": ");
        quote(b, scope);
        b.append(", \"metrics\": [").append(metrics).append("]}");
        return b.toString();
    }

    private static void metric(StringBuilder b, Metric m) {
        b.append("{\"name\": ");
        quote(b, m.getName());
        List<NumberDataPoint> points = List.of();
        switch (m.getDataCase()) {
            case GAUGE:
                b.append(", \"type\": \"gauge\"");
                points = m.getGauge().getDataPointsList();
                break;
            case SUM:
                Sum s = m.getSum();
                b.append(", \"type\": \"sum\", \"monotonic\": ").append(s.getIsMonotonic());
                b.append(", \"temporality\": ");
                switch (s.getAggregationTemporality()) {
                    case AGGREGATION_TEMPORALITY_DELTA: b.append("\"delta\""); break;
                    case AGGREGATION_TEMPORALITY_CUMULATIVE: b.append("\"cumulative\""); break;
                    default: b.append("\"unspecified\""); break;
                }
                points = s.getDataPointsList();
                break;
            default:
                b.append(", \"type\": \"other\"");
                break;
        }
        b.append(", \"points\": [");
        boolean first = true;
        for (NumberDataPoint dp : points) {
            if (!first) b.append(", ");
            first = false;
            b.append("{\"value\": ");
            switch (dp.getValueCase()) {
                case AS_DOUBLE:
                    double d = dp.getAsDouble();
                    b.append(Double.isFinite(d) ? Double.toString(d) : "null");
                    break;
                case AS_INT:
                    b.append(dp.getAsInt());
                    break;
                default:
                    b.append("null");
                    break;
            }
            b.append(", \"start_ns\": ").append(dp.getStartTimeUnixNano());
            b.append(", \"time_ns\": ").append(dp.getTimeUnixNano());
            b.append(", \"attributes\": ");
            Map<String, String> attrs = new LinkedHashMap<>();
            for (KeyValue kv : dp.getAttributesList()) attrs.put(kv.getKey(), text(kv.getValue()));
            attributes(b, attrs);
            b.append('}');
        }
        b.append("]}");
    }

    // An attribute value as a string: scalars as Java prints them, anything else in protobuf's
    // text form.
    private static String text(AnyValue v) {
        switch (v.getValueCase()) {
            case STRING_VALUE: return v.getStringValue();
            case BOOL_VALUE: return Boolean.toString(v.getBoolValue());
            case INT_VALUE: return Long.toString(v.getIntValue());
            case DOUBLE_VALUE: return Double.toString(v.getDoubleValue());
            case VALUE_NOT_SET: return "";
            default: return v.toString().trim();
        }
    }

    private static void attributes(StringBuilder b, Map<String, String> attrs) {
        b.append('{');
        boolean first = true;
        for (Map.Entry<String, String> e : attrs.entrySet()) {
            if (!first) b.append(", ");
            first = false;
            quote(b, e.getKey());
            b.append(": ");
            quote(b, e.getValue());
        }
        b.append('}');
    }

    // A JSON string, or null. Quote, backslash and every control character are escaped; the
    // rest is written as is (the file is UTF-8).
    static void quote(StringBuilder b, String s) {
        if (s == null) {
            b.append("null");
            return;
        }
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    if (c < 0x20 || c == 0x7f || c == '\u2028' || c == '\u2029') {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    // One write per line, in append mode, so that several brokers sharing the file (each its own
    // JVM) do not cut into each other's lines.
    private void append(String line) {
        String path = out;
        if (path == null) {
            if (!warned) {
                warned = true;
                System.err.println("KcTelemetryRecorder: " + OUT_CONFIG
                        + " is not set; telemetry not recorded");
            }
            return;
        }
        byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (WRITE_LOCK) {
            try (OutputStream os = new FileOutputStream(path, true)) {
                os.write(bytes);
                os.flush();
            } catch (IOException e) {
                System.err.println("KcTelemetryRecorder: cannot append to " + path + ": " + e);
            }
        }
    }
}
