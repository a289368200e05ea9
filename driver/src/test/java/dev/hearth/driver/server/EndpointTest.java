package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EndpointTest {

    @Test
    void unixWithEmptyAuthority() {
        Endpoint endpoint = Endpoint.parse("unix:///var/lib/kubelet/plugins/hearth/csi.sock");

        assertThat(endpoint).isEqualTo(new Endpoint.Unix(Path.of("/var/lib/kubelet/plugins/hearth/csi.sock")));
        assertThat(endpoint).hasToString("unix:///var/lib/kubelet/plugins/hearth/csi.sock");
    }

    @Test
    void unixWithoutAuthority() {
        Endpoint endpoint = Endpoint.parse("unix:/csi/csi.sock");

        assertThat(endpoint).isEqualTo(new Endpoint.Unix(Path.of("/csi/csi.sock")));
        assertThat(endpoint).hasToString("unix:///csi/csi.sock");
    }

    @Test
    void tcpIpv4() {
        Endpoint endpoint = Endpoint.parse("tcp://127.0.0.1:10000");

        assertThat(endpoint).isEqualTo(new Endpoint.Tcp("127.0.0.1", 10000));
        assertThat(endpoint).hasToString("tcp://127.0.0.1:10000");
    }

    @Test
    void tcpIpv6KeepsBracketsOnlyInTheUrl() {
        Endpoint endpoint = Endpoint.parse("tcp://[::1]:10000");

        assertThat(endpoint).isEqualTo(new Endpoint.Tcp("::1", 10000));
        assertThat(endpoint).hasToString("tcp://[::1]:10000");
    }

    @Test
    void tcpHostNameWithPortZero() {
        Endpoint endpoint = Endpoint.parse("tcp://localhost:0");

        assertThat(endpoint).isEqualTo(new Endpoint.Tcp("localhost", 0));
        assertThat(endpoint).hasToString("tcp://localhost:0");
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
                .hasMessageContaining("longer than 107 bytes");
    }

    @Test
    void recordsRefuseWhatParseRefuses() {
        assertThatThrownBy(() -> new Endpoint.Unix(Path.of("relative.sock"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Endpoint.Tcp("localhost", 70000)).isInstanceOf(IllegalArgumentException.class);
    }
}
