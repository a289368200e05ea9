package dev.hearth.driver.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class MetricsAddressTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        ":9808          | ''          | 9808",
        "0.0.0.0:9808   | 0.0.0.0     | 9808",
        "127.0.0.1:0    | 127.0.0.1   | 0",
        "localhost:8080 | localhost   | 8080",
        "[::1]:9808     | ::1         | 9808",
        "[::]:65535     | ::          | 65535",
    })
    void parsesHostAndPort(String value, String host, int port) {
        MetricsAddress address = MetricsAddress.parse(value);

        assertThat(address).isEqualTo(new MetricsAddress(host, port));
        assertThat(address.toString()).isEqualTo(value);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "''                 | the port is missing",
        "9808               | the port is missing",
        "localhost          | the port is missing",
        "localhost:         | the port is not a number",
        ":http              | the port is not a number",
        ":+80               | the port is not a number",
        ":-1                | the port is not a number",
        ":65536             | the port is out of range 0-65535",
        ":123456            | the port is not a number",
        "::1:9808           | an IPv6 address needs brackets",
        "[]:9808            | the brackets hold no address",
        "http://host:9808   | the host is not a name or an address",
        "'host name:9808'   | the host is not a name or an address",
        "user@host:9808     | the host is not a name or an address",
    })
    void rejectsWithAMessageNamingTheValue(String value, String reason) {
        assertThatThrownBy(() -> MetricsAddress.parse(value))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("invalid metrics address \"" + value + "\": " + reason
                        + "; accepted forms: host:port, [ipv6]:port, :port (every interface)");
    }

    @ParameterizedTest
    @ValueSource(ints = {-1, 65_536})
    void portOutOfRangeIsRefusedByTheRecordToo(int port) {
        assertThatThrownBy(() -> new MetricsAddress("", port)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Integer.toString(port));
    }
}
