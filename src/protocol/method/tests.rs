use super::*;

#[test]
fn every_method_parses_back_from_its_name() {
    for (i, m) in Method::ALL.into_iter().enumerate() {
        assert_eq!(Method::parse(m.as_str()), Some(m));
        assert_eq!(m as usize, i, "{m} is out of declaration order in ALL");
    }
    assert_eq!(
        Method::ALL.len(),
        Method::SubscriptionsAcknowledged as usize + 1
    );
    assert_eq!(Method::parse("tasks/list"), None);
}

#[test]
fn client_requests_come_first_so_their_discriminant_is_their_row() {
    let rows = Method::metric_names().count();
    for m in Method::ALL {
        assert_eq!(m.served().is_some(), (m as usize) < rows, "{m}");
    }
}

#[test]
fn metric_labels_name_only_the_methods_an_era_serves() {
    assert_eq!(Method::ToolsCall.metric_label(false), MethodLabel::new(0));
    assert_eq!(Method::ToolsCall.metric_label(true), MethodLabel::new(0));
    assert_eq!(Method::Ping.metric_label(true), MethodLabel::OTHER);
    assert_eq!(
        Method::ServerDiscover.metric_label(false),
        MethodLabel::OTHER
    );
    assert_eq!(Method::Progress.metric_label(false), MethodLabel::OTHER);
    assert_eq!(
        Method::metric_label_of("no/such", false),
        MethodLabel::OTHER
    );
}

#[test]
fn feature_methods_are_served_in_both_eras() {
    for m in Method::ALL {
        if m.feature().is_some() {
            assert_eq!(m.eras(), Some(Eras::Both), "{m}");
            assert_eq!(m.feature().map(FeatureMethod::method), Some(m));
        }
    }
}
