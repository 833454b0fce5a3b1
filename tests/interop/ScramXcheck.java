// Computes a SCRAM exchange with Kafka's own ScramFormatter for fixed inputs, so the C client in
// io/sasl.c can be checked against the broker's implementation (tests/interop/scram_xcheck.test.sh).
// Usage: ScramXcheck <SCRAM-SHA-256|SCRAM-SHA-512> <user> <password> <client-nonce> <server-nonce-suffix> <salt-b64> <iterations>
// Prints: line 1 the client-final-message, line 2 the server-final-message.
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;
import org.apache.kafka.common.security.scram.internals.ScramMessages;

public class ScramXcheck {
    public static void main(String[] a) throws Exception {
        ScramFormatter f = new ScramFormatter(ScramMechanism.forMechanismName(a[0]));
        String user = a[1], password = a[2], cnonce = a[3], nonce = a[3] + a[4], saltB64 = a[5];
        int iterations = Integer.parseInt(a[6]);
        ScramMessages.ClientFirstMessage cf = new ScramMessages.ClientFirstMessage(
            ("n,,n=" + ScramFormatter.saslName(user) + ",r=" + cnonce).getBytes(StandardCharsets.UTF_8));
        ScramMessages.ServerFirstMessage sf = new ScramMessages.ServerFirstMessage(
            ("r=" + nonce + ",s=" + saltB64 + ",i=" + iterations).getBytes(StandardCharsets.UTF_8));
        ScramMessages.ClientFinalMessage fin =
            new ScramMessages.ClientFinalMessage("n,,".getBytes(StandardCharsets.UTF_8), nonce);
        byte[] salted = f.saltedPassword(password, Base64.getDecoder().decode(saltB64), iterations);
        byte[] proof = f.clientProof(salted, cf, sf, fin);
        byte[] sig = f.serverSignature(f.serverKey(salted), cf, sf, fin);
        System.out.println(fin.clientFinalMessageWithoutProof() + ",p=" + Base64.getEncoder().encodeToString(proof));
        System.out.println("v=" + Base64.getEncoder().encodeToString(sig));
    }
}
