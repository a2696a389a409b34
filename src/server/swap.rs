//! Replacing what the server exposes: a configuration reload gives a new set of its own
//! features, and an upstream that announces a change gives new upstream features. Either
//! way the whole [`Features`] is rebuilt from both, swapped in atomically, and every session
//! is told which lists changed.

use std::sync::Arc;

use arc_swap::ArcSwap;

use super::BuildError;
use crate::events::{ServerEvent, ServerEvents};
use crate::features::{FeatureSet, Features, ListChanges};
use crate::providers::upstream::Gateway;

pub(super) struct FeatureSwap {
    pub features: Arc<ArcSwap<Features>>,
    pub events: Arc<ServerEvents>,
    /// The server's own features, without the upstreams': what a reload replaced last.
    pub base: ArcSwap<FeatureSet>,
    pub page_size: usize,
}

impl FeatureSwap {
    /// `set` (the server's own) with the upstreams' features, indexed.
    pub fn build(
        set: FeatureSet,
        gateway: Option<&Gateway>,
        page_size: usize,
    ) -> Result<Features, BuildError> {
        let mut whole = set;
        if let Some(gateway) = gateway {
            let offered = gateway.features();
            whole.tools.extend(offered.tools);
            whole.resources.extend(offered.resources);
            whole.templates.extend(offered.templates);
            whole.prompts.extend(offered.prompts);
        }
        whole.into_features(page_size).map_err(BuildError)
    }

    /// A reload: `set` becomes the server's own features.
    pub fn replace(
        &self,
        set: FeatureSet,
        gateway: Option<&Gateway>,
    ) -> Result<ListChanges, BuildError> {
        let features = Self::build(set.clone(), gateway, self.page_size)?;
        self.base.store(Arc::new(set));
        Ok(self.swap(features))
    }

    /// An upstream's offer changed: the same own features with the new upstream ones.
    pub fn refresh(&self, gateway: &Gateway) {
        let base = FeatureSet::clone(&self.base.load());
        match Self::build(base, Some(gateway), self.page_size) {
            Ok(features) => {
                self.swap(features);
            }
            Err(e) => {
                tracing::error!(error = %e, "an upstream's new offer clashes; the previous one stays")
            }
        }
    }

    fn swap(&self, features: Features) -> ListChanges {
        let old = self.features.swap(Arc::new(features));
        let changes = old.list_changes(&self.features.load());
        for (changed, event) in [
            (changes.tools, ServerEvent::ToolsListChanged),
            (changes.resources, ServerEvent::ResourcesListChanged),
            (changes.prompts, ServerEvent::PromptsListChanged),
        ] {
            if changed {
                self.events.publish(event);
            }
        }
        changes
    }
}
