package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReportJsonTest {

    /** As lvm 2.03 prints it with --reportformat json --units b --nosuffix. */
    static final String LVS = """
              {
                  "report": [
                      {
                          "lv": [
                              {"lv_name":"hearth.thin.abc", "lv_size":"1073741824", "lv_tags":"hearth.kind=volume,hearth.name=cHZjLWE", "lv_attr":"Vwi-a-tz--", "pool_lv":"tp", "origin":"", "data_percent":"0.00", "metadata_percent":"", "lv_metadata_size":"", "lv_health_status":""},
                              {"lv_name":"tp", "lv_size":"536870912", "lv_tags":"", "lv_attr":"twi-aotz--", "pool_lv":"", "origin":"", "data_percent":"12.50", "metadata_percent":"10.94", "lv_metadata_size":"4194304", "lv_health_status":""}
                          ]
                      }
                  ]
              }
            """;

    @Test
    void readsTheRowsOfASection() {
        List<Map<String, String>> rows = ReportJson.rows(LVS, "lv");

        assertThat(rows).hasSize(2);
        assertThat(rows.get(0)).containsEntry("lv_name", "hearth.thin.abc").containsEntry("pool_lv", "tp");
        LogicalVolume tp = LogicalVolume.of(rows.get(1));
        assertThat(tp.isThinPool()).isTrue();
        assertThat(tp.zeroesNewBlocks()).isTrue();
        assertThat(tp.open()).isTrue();
        assertThat(tp.dataPercent()).hasValue(12.5);
        assertThat(tp.metadataBytes()).isEqualTo(4194304);
        LogicalVolume thin = LogicalVolume.of(rows.get(0));
        assertThat(thin.isThin()).isTrue();
        assertThat(thin.active()).isTrue();
        assertThat(thin.open()).isFalse();
        assertThat(thin.tags()).containsExactlyInAnyOrder("hearth.kind=volume", "hearth.name=cHZjLWE");
        assertThat(thin.metadataPercent()).isEmpty();
    }

    @Test
    void anotherSectionOrAnEmptyReportHasNoRows() {
        assertThat(ReportJson.rows(LVS, "vg")).isEmpty();
        assertThat(ReportJson.rows("{\"report\": [{\"lv\": []}]}", "lv")).isEmpty();
    }

    @Test
    void escapesNumbersAndNestingAreRead() {
        var rows = ReportJson.rows("{\"report\":[{\"vg\":[{\"vg_name\":\"a\\\"b\\u0041\",\"n\":12,\"x\":true}]}],"
                + "\"log\":[{\"log_seq_num\":\"1\"}]}", "vg");
        assertThat(rows).containsExactly(Map.of("vg_name", "a\"bA", "n", "12", "x", "true"));
    }

    @Test
    void whatIsNotAReportIsRefused() {
        assertThatThrownBy(() -> ReportJson.rows("{\"report\": [", "lv")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not valid JSON");
        assertThatThrownBy(() -> ReportJson.rows("{} trailing", "lv")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ReportJson.rows("[]", "lv")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not an lvm report");
        assertThatThrownBy(() -> ReportJson.rows("{\"a\":\"\\q\"}", "lv")).isInstanceOf(IllegalArgumentException.class);
    }
}
