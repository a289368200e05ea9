package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EndpointTest {

    /** {@code value} parses to {@code expected}, which prints as {@code printed}. */
    private static void assertParses(String value, Endpoint expected, String printed) {
        Endpoint endpoint = Endpoint.parse(value);

        assertThat(endpoint).isEqualTo(expected);
        assertThat(endpoint).hasToString(printed);
    }

    @Test
    void unixWithEmptyAuthority() {
        assertParses("unix:///var/lib/kubelet/plugins/hearth/csi.sock",
                new Endpoint.Unix(Path.of("/var/lib/kubelet/plugins/hearth/csi.sock")),
                "unix:///var/lib/kubelet/plugins/hearth/csi.sock");
    }

    @Test
    void unixWithoutAuthority() {
        assertParses("unix:/csi/csi.sock", new Endpoint.Unix(Path.of("/csi/csi.sock")), "unix:///csi/csi.sock");
    }

    @Test
    void tcpIpv4() {
        assertParses("tcp://127.0.0.1:10000", new Endpoint.Tcp("127.0.0.1", 10000), "tcp://127.0.0.1:10000");
    }

    @Test
    void tcpIpv6KeepsBracketsOnlyInTheUrl() {
        assertParses("tcp://[::1]:10000", new Endpoint.Tcp("::1", 10000), "tcp://[::1]:10000");
    }

    @Test
    void tcpHostNameWithPortZero() {
        assertParses("tcp://localhost:0", new Endpoint.Tcp("localhost", 0), "tcp://localhost:0");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "unix:///run/hearth/csi.sock",
        "unix:///tmp/a b.sock",
        "tcp://10.1.2.3:65535",
        "tcp://[fe80::1]:1",
        "tcp://node-1.example.org:9000"
    })
    void toStringParsesBackToTheSameEndpoint(String value) {
        Endpoint endpoint = Endpoint.parse(value);

        assertThat(Endpoint.parse(endpoint.toString())).isEqualTo(endpoint);
        assertThat(endpoint).hasToString(value);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "",
        "/var/run/csi.sock",
        "csi.sock",
        "unix://csi.sock",
        "unix:csi.sock",
        "unix://host/csi.sock",
        "unix:///run/hearth/",
        "unix://",
        "http://127.0.0.1:80",
        "tcp://127.0.0.1",
        "tcp://127.0.0.1:",
        "tcp://127.0.0.1:abc",
        "tcp://127.0.0.1:65536",
        "tcp://127.0.0.1:-1",
        "tcp://:10000",
        "tcp://::1:10000",
        "tcp://127.0.0.1:10000/path",
        "tcp://user@127.0.0.1:10000",
        "127.0.0.1:10000"
    })
    void rejectsWithTheValueAndTheAcceptedForms(String value) {
        assertThatThrownBy(() -> Endpoint.parse(value))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\"" + value + "\"")
                .hasMessageContaining("unix:///absolute/path.sock")
                .hasMessageContaining("tcp://host:port");
    }

    @Test
    void rejectsASocketPathTooLongForSockaddrUn() {
        String value = "unix:///" + "d".repeat(120) + ".sock";

        assertThatThrownBy(() -> Endpoint.parse(value))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("longer than 106 bytes");
    }

    /** 106 bytes is served (GrpcServerTest binds one); 107 would fail at bind, so it fails here. */
    @Test
    void theLongestPathIsOneABindTakes() {
        String longest = "/" + "d".repeat(Endpoint.MAX_UNIX_PATH_BYTES - 1);

        assertThat(Endpoint.parse("unix://" + longest)).isEqualTo(new Endpoint.Unix(java.nio.file.Path.of(longest)));
        assertThatThrownBy(() -> Endpoint.parse("unix://" + longest + "d"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("longer than 106 bytes");
    }

    @Test
    void recordsRefuseWhatParseRefuses() {
        assertThatThrownBy(() -> new Endpoint.Unix(Path.of("relative.sock"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Endpoint.Tcp("localhost", 70000)).isInstanceOf(IllegalArgumentException.class);
    }
}
