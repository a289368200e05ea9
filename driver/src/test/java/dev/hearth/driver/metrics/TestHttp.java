package dev.hearth.driver.metrics;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Plain HTTP requests to a server on 127.0.0.1, as Prometheus and the kubelet make them. */
final class TestHttp {

    private TestHttp() {}

    static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return send(port, path, "GET");
    }

    static HttpResponse<String> send(int port, String path, String method) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .method(method, HttpRequest.BodyPublishers.noBody())
                .timeout(Duration.ofSeconds(10))
                .build();
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            return client.send(request, HttpResponse.BodyHandlers.ofString());
        }
    }
}
